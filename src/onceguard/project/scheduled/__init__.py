"""Job discovery: every function a module hands to a scheduler, a ticker, a worker loop or a beat schedule,
with where it runs and how it is registered. OG201, OG202, OG203 and OG204 judge the jobs; OG302 asks whether a
job runs once per tick. The scheduler APIs are data in ``knowledge/schedulers.py``."""

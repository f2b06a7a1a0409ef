"""Scheduled work: every scheduler fires in each replica, so a job must begin with a claim.

OG201 unguarded-scheduled-job, OG202 implicit-schedule-timezone, OG203 loud-skip-log.
The scheduler APIs are data in ``knowledge/schedulers.py``; what counts as a
claim is ``onceguard.project.claims``.
"""
from ...project.scheduled.discovery import Scheduled, Target, scheduled_in
from .skip_log import LoudSkipLog
from .timezones import ImplicitScheduleTimezone
from .unguarded import UnguardedIdempotentSweep, UnguardedScheduledJob

__all__ = ["ImplicitScheduleTimezone", "LoudSkipLog", "Scheduled", "Target", "UnguardedIdempotentSweep",
           "UnguardedScheduledJob", "scheduled_in"]

"""Check-then-act (OG302) guards work that must not be done twice.  When everything the passed test leads to
changes only this process (an id added to its own set) or gives the same result however often it runs (a
constant written by a set-based update), two requests that both pass the test do no harm; a mail sent after
the same test is sent twice."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Feed(models.Model):
        url = models.URLField(unique=True)
        state = models.IntegerField(default=0)
        failures = models.IntegerField(default=0)
        interval = models.IntegerField(null=True)
"""

SCHEDULE = """\
    ACTIVE_FEEDS = set()


    def watch(feed_id):
        ACTIVE_FEEDS.add(feed_id)
"""

SCHEDULE_CLASS = """\
    class Watched:
        ids = set()

        @classmethod
        def add(cls, feed_id):
            cls.ids.add(feed_id)
"""

SERVICES = """\
    from django.core.mail import send_mail

    from .models import Feed
    from .schedule import watch


    def activate(feed_id):
        feed = Feed.objects.get(pk=feed_id)
        if feed.state == 1:
            return feed
        feed.state = 1
        feed.failures = 0
        feed.save()
        watch(feed.id)
        Feed.objects.filter(pk=feed.id).update(interval=None)
        return feed


    def announce(feed_id):
        feed = Feed.objects.get(pk=feed_id)
        if feed.state == 1:
            return feed
        feed.state = 1
        feed.save()
        {work}
        return feed
"""


def _project(tmp_path, schedule=SCHEDULE, watch="watch(feed.id)",
             work='send_mail("Feed is live", feed.url, "f@example.com", ["o@example.com"])'):
    write(tmp_path, {"feeds/__init__.py": "", "feeds/models.py": MODELS, "feeds/schedule.py": schedule,
                     "feeds/services.py": SERVICES.replace("{work}", work).replace(
                         "watch(feed.id)", watch).replace("import watch", "import " + watch.split(".")[0].split("(")[0])})


def test_work_that_stays_in_the_process_or_repeats_harmlessly(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "feeds/services.py", codes=("OG302",)) == [(23, "OG302")]


def test_the_same_through_a_class_of_the_project(tmp_path):
    _project(tmp_path, schedule=SCHEDULE_CLASS, watch="Watched.add(feed.id)")
    assert findings(tmp_path, "feeds/services.py", codes=("OG302",)) == [(23, "OG302")]


def test_work_nothing_shows_harmless_keeps_the_finding(tmp_path):
    # A project call the analysis cannot follow (an SDK's client) may be the work done twice.
    _project(tmp_path, work="feed_client.publish(feed.url)")
    assert findings(tmp_path, "feeds/services.py", codes=("OG302",)) == [(23, "OG302")]


HOOKS = """\
    HOOKS = {}


    def on(name):
        def register(function):
            HOOKS.setdefault(name, []).append(function)
            return function
        return register


    def _dispatch(hooks, args):
        for hook in hooks:
            _call(hook, args)


    def _call(hook, args):
        hook(*args)


    def run_hook(name, *args):
        _dispatch(HOOKS.get(name, []), args)
"""


def test_work_dispatched_to_registered_hooks_may_be_done_twice(tmp_path):
    # What a hook registry runs is whatever was registered: nothing shows it harmless, however deep it is.
    services = SERVICES.replace("{work}", 'run_hook("feed_live", feed)').replace(
        "from .schedule import watch", "from .hooks import run_hook\n    from .schedule import watch")
    write(tmp_path, {"feeds/__init__.py": "", "feeds/models.py": MODELS, "feeds/schedule.py": SCHEDULE,
                     "feeds/hooks.py": HOOKS, "feeds/services.py": services})
    assert findings(tmp_path, "feeds/services.py", codes=("OG302",)) == [(24, "OG302")]

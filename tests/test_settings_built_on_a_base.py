"""OG605 on Django Channels' in-memory layer: a base settings module's ``CHANNEL_LAYERS`` that every deployed settings
module built on it (``from .base import *``) replaces is not what runs; when one of them keeps it, or the base is
named as the settings to run, it is."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BASE = """\
    INSTALLED_APPS = ["channels", "board"]
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
"""

PRODUCTION = """\
    from .base import *  # noqa: F401,F403

    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  "CONFIG": {"hosts": ["redis://cache:6379/0"]}}}
"""

STAGING = """\
    from .base import *  # noqa: F401,F403

    DEBUG = False
"""

LOCAL = """\
    from .base import *  # noqa: F401,F403

    DEBUG = True
"""

VIEWS = """\
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer


    def announce(text: str) -> None:
        async_to_sync(get_channel_layer().group_send)("board", {"type": "notice", "text": text})
"""

ASGI = """\
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "{settings}")
"""


@pytest.mark.parametrize("extra, settings, expected", [
    ({"site/settings/production.py": PRODUCTION, "site/settings/local.py": LOCAL}, "site.settings.production", []),
    ({"site/settings/production.py": PRODUCTION, "site/settings/staging.py": STAGING}, "site.settings.production",
     [(2, "OG605")]),
    ({"site/settings/production.py": PRODUCTION}, "site.settings.base", [(2, "OG605")]),
])
def test_an_in_memory_layer_in_base_settings(tmp_path, extra, settings, expected):
    write(tmp_path, {"site/__init__.py": "", "site/settings/__init__.py": "", "site/settings/base.py": BASE,
                     "board/__init__.py": "", "board/views.py": VIEWS,
                     "site/asgi.py": ASGI.replace("{settings}", settings), **extra})
    assert findings(tmp_path, "site/settings/base.py", codes=("OG605",)) == expected

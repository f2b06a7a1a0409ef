"""Clients that receive a stream of events per connection, not per application.

Connecting one of these from every replica's start-up gives every replica its own copy of the
stream (Discord gateway, Matrix sync) or makes the replicas fight over it (Telegram long polling).
Slack Socket Mode is not here: Slack spreads events over an app's open sockets, one delivery each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet


@dataclass(frozen=True)
class ConsumerKind:
    service: str
    start_methods: FrozenSet[str]
    why: str
    instead: str


_DISCORD = ConsumerKind(
    "Discord gateway",
    frozenset({"start", "run", "connect"}),
    "each replica opens its own gateway session with the same token and receives every event, so every "
    "message or command is handled (and answered) once per replica",
    "Run the bot in one dedicated process (a separate single-replica deployment or a leader-elected worker), "
    "or answer through Discord's HTTP interactions endpoint, which the load balancer delivers once",
)
_TELEGRAM = ConsumerKind(
    "Telegram long polling",
    frozenset({"run_polling", "start_polling", "polling", "infinity_polling"}),
    "Telegram serves one getUpdates poller per bot: the replicas' pollers end each other's requests "
    "(409 Conflict), so updates are split between replicas at random or a replica's poller keeps failing",
    "Use a webhook (`run_webhook`/`set_webhook`), which Telegram delivers once through the load balancer, "
    "or poll from one dedicated process",
)
_MATRIX = ConsumerKind(
    "Matrix sync loop",
    frozenset({"sync_forever"}),
    "each replica syncs the same account and receives every room event, so each event is handled once per "
    "replica",
    "Sync from one dedicated process (a single-replica worker or a leader-elected one) and hand events to the "
    "service through a queue",
)

#: Qualified constructor -> what it connects to.
CONSUMER_CONSTRUCTORS: Dict[str, ConsumerKind] = {
    "discord.Client": _DISCORD,
    "discord.AutoShardedClient": _DISCORD,
    "discord.Bot": _DISCORD,
    "discord.ext.commands.Bot": _DISCORD,
    "discord.ext.commands.AutoShardedBot": _DISCORD,
    "hikari.GatewayBot": _DISCORD,
    "telegram.ext.Application": _TELEGRAM,
    "telegram.ext.ApplicationBuilder": _TELEGRAM,
    "telegram.ext.Updater": _TELEGRAM,
    "aiogram.Dispatcher": _TELEGRAM,
    "telebot.TeleBot": _TELEGRAM,
    "telebot.async_telebot.AsyncTeleBot": _TELEGRAM,
    "nio.AsyncClient": _MATRIX,
}

#: Byte strings that let the prefilter keep a file that may start such a client.
TRIGGERS = (b"discord", b"telegram", b"aiogram", b"telebot", b"hikari", b"sync_forever")

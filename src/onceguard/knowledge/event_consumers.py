"""Clients that receive a stream of events per connection, not per application.

Connecting one of these from every replica's start-up gives every replica its own copy of the
stream (Discord gateway, Matrix sync) or makes the replicas fight over it (Telegram long polling).
Slack Socket Mode is not here: Slack spreads events over an app's open sockets, one delivery each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Tuple

from .effects import REPLICA_IDENTITY_CALLS


@dataclass(frozen=True)
class ConsumerKind:
    service: str
    start_methods: FrozenSet[str]
    why: str  # how the service treats one connection per replica, for the help
    instead: str
    hazard: str  # what goes wrong with one per replica, as the end of the finding's one sentence


_DISCORD = ConsumerKind(
    "Discord gateway",
    frozenset({"start", "run", "connect"}),
    "each replica opens its own gateway session with the same token and receives every event, so every "
    "message or command is handled (and answered) once per replica",
    "Run the bot in one dedicated process (a separate single-replica deployment or a leader-elected worker), "
    "or answer through Discord's HTTP interactions endpoint, which the load balancer delivers once",
    "every message or command is handled once per replica",
)
_TELEGRAM = ConsumerKind(
    "Telegram long polling",
    frozenset({"run_polling", "start_polling", "polling", "infinity_polling"}),
    "Telegram serves one getUpdates poller per bot: the replicas' pollers end each other's requests "
    "(409 Conflict), so updates are split between replicas at random or a replica's poller keeps failing",
    "Use a webhook (`run_webhook`/`set_webhook`), which Telegram delivers once through the load balancer, "
    "or poll from one dedicated process",
    "the replicas' pollers fight over the bot's updates",
)
_MATRIX = ConsumerKind(
    "Matrix sync loop",
    frozenset({"sync_forever"}),
    "each replica syncs the same account and receives every room event, so each event is handled once per "
    "replica",
    "Sync from one dedicated process (a single-replica worker or a leader-elected one) and hand events to the "
    "service through a queue",
    "every room event is handled once per replica",
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


# -- pollers and consumers that must be single ------------------------------------------------------------
#: IMAP clients: a function that makes one and acts on the mailbox is a mail poller.
IMAP_CONSTRUCTORS: FrozenSet[str] = frozenset({
    "imaplib.IMAP4", "imaplib.IMAP4_SSL", "imaplib.IMAP4_stream", "imapclient.IMAPClient",
    "aioimaplib.IMAP4", "aioimaplib.IMAP4_SSL", "aioimaplib.aioimaplib.IMAP4_SSL", "imap_tools.MailBox",
    "imap_tools.MailBoxUnencrypted", "imap_tools.MailBoxTls",
})
#: What a poller does to the mailbox (reading it, or moving/marking what it read).
IMAP_MAILBOX_METHODS: FrozenSet[str] = frozenset({
    "search", "fetch", "uid", "store", "move", "copy", "expunge", "idle", "idle_start", "add_flags", "delete",
})
IMAP_POLLER = ConsumerKind(
    "IMAP mailbox poller",
    frozenset(),
    "each replica polls the same mailbox: both fetch the same unseen messages before either marks or moves them, "
    "so every mail is processed (tickets opened, replies sent) once per replica",
    "Poll from one dedicated process (a single-replica worker, or a scheduled job that claims each run), or mark "
    "each message as taken with an atomic `UID MOVE` to a processing folder and act only on the ones moved",
    "every mail is processed once per replica",
)
#: Consumers the broker lets only one connection hold: ``exclusive=True`` on the consume call.
EXCLUSIVE_CONSUME_METHODS: FrozenSet[str] = frozenset({"basic_consume", "consume"})
EXCLUSIVE_KEYWORD = "exclusive"
EXCLUSIVE_CONSUMER = ConsumerKind(
    "exclusive queue consumer",
    frozenset(),
    "the broker admits one exclusive consumer per queue: the first replica holds it and every other replica's "
    "consume is refused (ACCESS_REFUSED), so their start-up fails or their consumer never runs",
    "Run the consumer in one dedicated process, or drop `exclusive=True` and let the broker spread messages over "
    "the replicas (RabbitMQ `x-single-active-consumer` keeps one active consumer with fail-over)",
    "the broker refuses every replica's consumer but the first",
)
# -- channels every subscriber hears in full (``rules/channel_subscribers``) ----------------------------------
#: Kafka consumer classes: with no group, or a group of their own, each replica reads every message.
KAFKA_CONSUMERS: FrozenSet[str] = frozenset({
    "kafka.KafkaConsumer", "kafka.consumer.KafkaConsumer", "aiokafka.AIOKafkaConsumer",
    "aiokafka.consumer.AIOKafkaConsumer", "confluent_kafka.Consumer",
})
#: How the group is given: a keyword (kafka-python, aiokafka) or a librdkafka configuration key.
KAFKA_GROUP_KEYWORDS: FrozenSet[str] = frozenset({"group_id", "group.id"})
#: Values that differ between replicas (this host's name, this process's id, a fresh id): a group named with one
#: is the replica's own.
REPLICA_OWN_VALUES: FrozenSet[str] = REPLICA_IDENTITY_CALLS | frozenset({"os.uname"})
SUBSCRIBER_HAZARD = "every message is handled once per replica"
SUBSCRIBER_INSTEAD = (
    "Let one replica take each message: a Redis Stream read with a consumer group (`XREADGROUP` and `XACK`), one "
    "Kafka group id every replica shares, a NATS queue group (`queue=`), a queue the replicas share on the "
    "broker; or claim each message before acting on it (`SET <message id> NX EX`, or an `INSERT ... ON CONFLICT "
    "DO NOTHING` of its id); or subscribe from one dedicated process")

#: Calls that run a function elsewhere (a thread, a task, a pool): its first argument or ``target=``.
START_ELSEWHERE: FrozenSet[str] = frozenset({
    "threading.Thread", "Thread", "asyncio.create_task", "asyncio.ensure_future", "create_task", "ensure_future",
    "run_in_executor", "start_new_thread", "_thread.start_new_thread", "submit", "add_job", "spawn",
})

#: Byte strings that let the prefilter keep a file that may start such a client: the clients' own names, and
#: the start-up hooks that may start a poller defined in another module (the command line follows it there).
TRIGGERS = (b"listen(", b"get_message", b"xread(", b"add_listener", b"KafkaConsumer", b"confluent_kafka",
            (b"subscribe(", b"cb="), (b"subscribe(", b"nats"),
            b"discord", b"telegram", b"aiogram", b"telebot", b"hikari", b"sync_forever", b"IMAP", b"imap",
            b"MailBox", b"exclusive", b"lifespan", b"on_event", b"on_startup", b"add_event_handler", b"def ready",
            b"def create_app", b"before_first_request")

#: RabbitMQ clients: a queue one replica declares for itself (``exclusive=True``, or left unnamed so the server
#: names it) and binds to an exchange receives a copy of every message the exchange routes, in every replica.
AMQP_PACKAGES: FrozenSet[str] = frozenset({"aio_pika", "pika", "aiormq", "kombu"})
#: Declaring a queue: aio-pika ``channel.declare_queue(name=None, *, exclusive=False, ...)``, pika
#: ``channel.queue_declare(queue, ..., exclusive=False, ...)``; the name's keyword and position.
AMQP_QUEUE_DECLARES: Dict[str, Tuple[str, int]] = {"declare_queue": ("name", 0), "queue_declare": ("queue", 0)}
AMQP_EXCLUSIVE_KEYWORD = "exclusive"
#: Reading a queue: aio-pika ``queue.iterator()`` (looped over) and ``queue.consume(callback)``; pika
#: ``channel.basic_consume(queue=name, on_message_callback=callback)``.
AMQP_ITERATORS = frozenset({"iterator"})
AMQP_CALLBACK_CONSUMES: Dict[str, Tuple[str, int]] = {"consume": ("callback", 0),
                                                       "basic_consume": ("on_message_callback", 1)}

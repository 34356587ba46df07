"""`configbags serve [door flags] [server flags]`: publish the config from the server flags
and serve the operator's HTTP API (FastAPI on uvicorn) until SIGTERM or Ctrl-C, then shut
down cleanly with exit code 0.

Door flags are the few below; every other flag is a server flag of the generated
`ServerArgs` (`--model-path`, `--host`, `--port`, `--api-key`, `--admin-api-key`, ...).
The door listens on the config's own `host` and `port` leaves."""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from configbags.packages import load_context
from configbags.runtime.cmdline import (
    UsageErrors,
    add_help,
    peek_package,
    print_stderr,
    refuse_collisions,
)
from configbags.runtime.context import Context
from configbags.runtime.errors import ConfigError, LayoutError
from configbags.runtime.leaftypes import is_text, shown_text
from configbags.runtime.project import load_project
from configbags.runtime.record import (
    Once,
    check_dump_apart,
    dump_path_of,
    model_inputs,
    origins_of,
    parse_cli_words,
    record_from_cli_args,
    warn_once,
)
from configbags.runtime.resolve import NO_FACTS, Facts, folder_facts
from configbags.serve.door import (
    DEFAULT_MAX_BODY_BYTES,
    OPERATOR,
    Door,
    check_client_variables,
    check_keys,
    protection,
)
from configbags.serve.listen import (
    DEFAULT_HEAD_TIMEOUT_S,
    DEFAULT_SEND_TIMEOUT_S,
    MAX_CONNECTIONS,
    Tally,
    bind,
    connections_allowed,
    default_max_connections,
    guarded_protocol,
    url_host,
)
from configbags.serve.watch import (
    DEFAULT_INTERVAL_S,
    MAX_INTERVAL_S,
    MIN_INTERVAL_S,
    NOT_A_FILE,
    SAYS_NOTHING,
    ConfigWatcher,
    StartFiles,
    WatchedDoor,
    says_nothing,
    signature,
)

HOST_LEAF, PORT_LEAF, MODEL_PATH_LEAF = "host", "port", "model_path"
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 30000
# Each rank is a process importing torch on this machine: beyond a node's GPU count times
# pipeline stages, a larger --ranks is a typo that would fork hundreds of processes.
MAX_RANKS = 64


MAX_RANK_TIMEOUT_S = 86_400.0  # a day: beyond it torch's millisecond timeouts overflow, and no stall is ever named


def _seconds(text: str) -> float:
    """A positive number of seconds up to a day (nan, 0, -1 and inf would name a stall at
    once or never; 1e10 overflows torch's millisecond timeouts)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or not 0 < value <= MAX_RANK_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds, at most "
                                          f"{MAX_RANK_TIMEOUT_S:g} (a day)")
    return value


MAX_BODY_BYTES = 64 << 20  # --max-body-bytes: far above any schema's PATCH, far below memory
MIN_RANK_TIMEOUT_S = 0.1  # below a millisecond torch's store timeout is 0; below this no gloo call answers


def _rank_timeout(text: str) -> float:
    value = _seconds(text)
    if value < MIN_RANK_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least {MIN_RANK_TIMEOUT_S:g} seconds (a rank cannot "
                                          f"answer sooner; at most {MAX_RANK_TIMEOUT_S:g})")
    return value


def _interval(text: str) -> float:
    """Seconds between two looks at the watched file: finite and within
    [MIN_INTERVAL_S, MAX_INTERVAL_S] (1e-9 would spin a core; inf or 1e308 would overflow the
    thread's wait and end it)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:  # (nan compares false: refused too)
        raise argparse.ArgumentTypeError(
            f"{text!r}: give between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g} seconds")
    return value


def _parser(package: str | None = None) -> argparse.ArgumentParser:
    parser = UsageErrors(
        prog="configbags serve", add_help=False,
        allow_abbrev=False,  # an abbreviation could swallow a server flag
        description="Publish the config and serve the operator's HTTP config API.",
        epilog="Every other flag is a server flag (the package's CONFIG.md), e.g. --model-path M "
               "--port 30000 --api-key KEY --admin-api-key KEY. Endpoints: GET /health, "
               "GET /server_info, GET /config/{leaf}, PATCH /config, GET /openapi.json.",
    )
    parser.add_argument("--ranks", action=WarnAgain, type=int, default=1, metavar="N",
                        help="hold the config on N ranks: this process is rank 0 and starts "
                             f"N-1 worker ranks; tp_size*pp_size must equal N (default 1: no ranks; at "
                             f"most {MAX_RANKS})")
    parser.add_argument("--rank-timeout", action=WarnAgain, type=_rank_timeout, default=10.0, metavar="S",
                        help="seconds to wait for a rank before answering 503; a rank silent this "
                             "long is stalled: /health names it until it answers again; silent three times "
                             "as long, it leaves the group (its process ended; reads go on, changes "
                             "are refused until a restart) (default 10)")
    parser.add_argument("--package", default=None,
                        help="generated config package (default: [tool.configbags] package)")
    parser.add_argument("--role", action=WarnAgain, default="launcher",
                        help="the role this process publishes as (default launcher); changes "
                             f"over HTTP are always checked as the {OPERATOR!r} role")
    parser.add_argument("--max-body-bytes", action=WarnAgain, type=int, default=DEFAULT_MAX_BODY_BYTES, metavar="B",
                        help=f"largest PATCH body accepted (default {DEFAULT_MAX_BODY_BYTES}); larger gets 413")
    parser.add_argument("--max-connections", action=WarnAgain, type=int, default=None, metavar="N",
                        help="open connections the door holds at most, half of them from one client host; one "
                             "over is closed as soon as it is accepted (default: half the file-descriptor limit, at "
                             f"most 1024; 1 to {MAX_CONNECTIONS})")
    parser.add_argument("--head-timeout", action=WarnAgain, type=_seconds, default=DEFAULT_HEAD_TIMEOUT_S, metavar="S",
                        help="seconds a connection has to send a whole request line and headers; one that has "
                             f"not is closed (default {DEFAULT_HEAD_TIMEOUT_S:g})")
    parser.add_argument("--send-timeout", action=WarnAgain, type=_seconds, default=DEFAULT_SEND_TIMEOUT_S, metavar="S",
                        help="seconds a client may leave its answers unread (the send buffer full); a "
                             f"connection that does is closed (default {DEFAULT_SEND_TIMEOUT_S:g})")
    parser.add_argument("--watch", type=Path, default=None, metavar="FILE", action=Once,  # one file is followed
                        help="read FILE as a --config file and follow it as Kubernetes updates a mounted "
                             "ConfigMap: live changes are applied on every rank (source file:FILE), the rest "
                             "shown as restart required (docs/FLEET.md)")
    parser.add_argument("--watch-interval", action=WarnAgain, type=_interval, default=DEFAULT_INTERVAL_S, metavar="S",
                        help=f"seconds between two looks at the watched file, {MIN_INTERVAL_S:g} to "
                             f"{MAX_INTERVAL_S:g} (default {DEFAULT_INTERVAL_S:g})")
    # `--serve-log-level`, not `--log-level`: a server leaf is spelled so (the config's own log level)
    parser.add_argument("--serve-log-level", action=WarnAgain, default="warning", choices=["debug", "info", "warning", "error"],
                        help="log level of the HTTP door (default warning); --log-level is the server's")
    add_help(parser, lambda: _server_parser(package))
    return parser


class WarnAgain(argparse.Action):
    """One of serve's own flags: given again, the last wins, as argparse has it, with a
    warning naming both values, as a server flag given twice has (`--ranks 2 --ranks 1`
    kept the last in silence)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = vars(namespace).setdefault("_given", set())  # serve's own namespace: never a record's
        if self.dest in given:
            message = (f"{option_string} is given twice ({getattr(namespace, self.dest)}, then {values}): the last "
                       f"wins, {values}")
            warn_once(message, message)
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def _server_parser(package: str | None) -> argparse.ArgumentParser | None:
    """The package's server flags, for --help (None when it does not load)."""
    try:
        record_type = load_context(package or load_project().require_package()).record_type
    except ConfigError:
        return None
    if record_type is None:
        return None
    server = argparse.ArgumentParser(prog="configbags serve", allow_abbrev=False, add_help=False)
    record_type.add_cli_args(server)
    return server


def _check_own_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """serve's own flags within their bounds, the watched file one to follow (exit 2)."""
    if not 1 <= args.ranks <= MAX_RANKS:
        parser.error(f"--ranks must be from 1 to {MAX_RANKS} (each rank is a process of this machine)")
    if not 1 <= args.max_body_bytes <= MAX_BODY_BYTES:
        parser.error(f"--max-body-bytes must be from 1 to {MAX_BODY_BYTES} (a PATCH body is a few leaves; the "
                     f"door holds the body in memory while it reads it)")
    if args.max_connections is not None and not 1 <= args.max_connections <= MAX_CONNECTIONS:
        parser.error(f"--max-connections must be from 1 to {MAX_CONNECTIONS}")
    allowed = connections_allowed()
    if args.max_connections is not None and allowed is not None and args.max_connections > allowed:
        # past the descriptor limit every accept fails instead of the cap refusing cheaply
        parser.error(f"--max-connections {args.max_connections} is more than this process can open: its descriptor "
                     f"limit (ulimit -n) leaves room for {allowed}; give at most {allowed}, or raise the limit")
    if args.watch is not None:
        if not str(args.watch).strip() or str(args.watch) == ".":
            parser.error("--watch needs a file name")
        if not is_text(str(args.watch)):  # as --config: the name is the source of the leaves it sets
            parser.error(f"--watch {shown_text(str(args.watch))}: the file name holds bytes that are not UTF-8 (each "
                         f"shown as \\udcXX), which no readback, log or override source can carry; rename the file "
                         f"(or its folder) to UTF-8 text")
        digest = signature(args.watch)
        if digest is not None and digest[5].startswith(NOT_A_FILE):
            parser.error(f"--watch {args.watch}: not a regular file ({digest[5][len(NOT_A_FILE):]}); give the config "
                         f"file to follow")
        if digest is not None and digest[4] == 0:
            # as while it runs: a writer truncating the file leaves it empty, never meaning "no settings"
            parser.error(f"--watch {args.watch}: the file is empty (0 bytes); it must hold the settings to follow "
                         f"(write {{}} for none)")
        if digest is not None and says_nothing(args.watch):
            parser.error(f"--watch {args.watch}: the file {SAYS_NOTHING}")


def main(argv: list[str] | None = None) -> int:
    parser = _parser(peek_package(list(sys.argv[1:] if argv is None else argv)))
    args, server_flags = parser.parse_known_args(argv)
    _check_own_flags(parser, args)
    if args.watch is not None:
        server_flags = [*server_flags, "--config", str(args.watch)]
    try:
        import uvicorn

        from configbags.serve.app import create_app
    except ImportError as exc:
        print_stderr(f"configbags serve needs the serve extra ({exc}): pip install 'configbags[serve]'")
        return 2
    try:
        package = args.package or load_project().require_package()
        context = load_context(package)
    except ConfigError as exc:
        parser.error(str(exc))
    record_type = context.record_type
    if record_type is None:
        parser.error(f"{package} has no ServerArgs record type; regenerate it (configbags gen)")
    server = _server_parser(package)
    if server is not None:
        try:  # never let serve's own flag take a value the operator meant for the config
            refuse_collisions("configbags serve", parser, server, package)
        except ConfigError as exc:
            parser.error(str(exc))
    record = record_type.from_cli(server_flags, prog="configbags serve")
    logging.basicConfig(level=args.serve_log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")

    ranks = None
    watcher = None
    rebuild = None
    sockets: list[Any] = []
    tally = Tally()
    try:
        given = record.to_dict()
        # the engine loads the model from its folder's config.json: a dump there replaces it
        check_dump_apart(dump_path_of(record), model_inputs(given.get(MODEL_PATH_LEAF), "--model-path"))
        check_keys(context.registry, given, origins_of(record, context.registry.leaves), os.environ)  # before any rank starts
        check_client_variables(context.registry, given, os.environ)
        if args.watch is not None:  # the files not followed, read now, as the record above read them
            rebuild = _rebuilder(context, record_type, server_flags, args.watch)
        # bound before a rank starts or the start line is printed: a port in use is one line, exit 2
        sockets = bind(str(given.get(HOST_LEAF, DEFAULT_HOST)), int(given.get(PORT_LEAF, DEFAULT_PORT)))
        # the model rules apply, and a contract member such as `model.config.vocab_size` has a value
        model = folder_facts(given.get(MODEL_PATH_LEAF))
        facts = NO_FACTS if model is None else Facts(None, model)
        if args.ranks > 1:
            ranks = _start_ranks(context, package, record, args, facts)
        else:
            context.publish(record, role=args.role, facts=facts)
            context.seal()  # the door serves a running server: model load is over
        door = Door(context, ranks) if args.watch is None else WatchedDoor(context, ranks)
        app = create_app(door, max_body_bytes=args.max_body_bytes)
        if isinstance(door, WatchedDoor) and rebuild is not None:
            watcher = _watch(door, app, rebuild, args)
        values = context.state.values
        max_connections = args.max_connections or default_max_connections()
        config = uvicorn.Config(app, http=guarded_protocol(max_connections, args.head_timeout, tally,
                                                                 args.send_timeout),
                                log_level=args.serve_log_level, access_log=False, timeout_graceful_shutdown=5,
                                # a client's pooled connection must not be closed under it while
                                # a burst of requests queues (uvicorn's default is 5 s)
                                timeout_keep_alive=30,
                                # the client is the socket's peer: any local process could
                                # otherwise name itself in the log through X-Forwarded-For
                                proxy_headers=False)
        host, port = sockets[0].getsockname()[:2]
        print_stderr(f"configbags serve: http://{url_host(host)}:{port} ({args.ranks} rank(s); operator may change "
                     f"{len(door.writable)} leaves)")
        print_stderr(f"configbags serve: {protection(values)}")
        # uvicorn shuts down on SIGTERM/SIGINT, then restores these handlers and re-raises the
        # signal to them; left at the defaults, that would kill the process (-15) after a
        # clean shutdown, or print a KeyboardInterrupt traceback.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _stopped)
        uvicorn.Server(config).run(sockets=sockets)  # returns once in-flight requests finish
    except ConfigError as exc:
        print_stderr(f"configbags serve: {exc}")
        return 2
    finally:
        tally.flush()
        for sock in sockets:
            sock.close()
        if watcher is not None:
            watcher.stop()
        if ranks is not None:
            ranks.stop()
    return 0


def _rebuilder(context: Context[Any], record_type: Any, server_flags: list[str], watched: Path) -> Callable[[], Any]:
    """How each change of --watch FILE rebuilds the record: the flags parsed once, as at
    start, so CLI flags keep winning; the watched file read again, every other --config file
    as it read at start (read here, once: `StartFiles`)."""
    flags_parser = argparse.ArgumentParser(prog="configbags serve", allow_abbrev=False, add_help=False)
    record_type.add_cli_args(flags_parser)
    namespace = parse_cli_words(flags_parser, context.registry, server_flags)
    schema_path = Path(sys.modules[record_type.__module__].SCHEMA_PATH)
    configs = list(getattr(namespace, "config", None) or ())
    _refuse_watched_twice(configs[:-1], watched)  # the last is the watched file itself (main appends it)
    start_files = StartFiles(schema_path, watched)
    start_files.read(configs)
    return lambda: record_from_cli_args(record_type, context.registry, copy.copy(namespace), schema_path,
                                        load=start_files.load)


def _refuse_watched_twice(configs: Sequence[str], watched: Path) -> None:
    """A --config file that is the watched file (by any name: the same path, a link): its
    start-time copy would sit under every reload, so a key the watched file drops would
    keep its old value, read back as the --config file's."""
    for config in configs:
        with contextlib.suppress(OSError):
            if os.path.samefile(config, watched):
                raise ConfigError(f"--config {config} is the watched file --watch {watched}: a key the watched file "
                                  f"drops would keep its start-time value from the --config copy; give the file "
                                  f"once, as --watch {watched}")


def _watch(door: WatchedDoor, app: Any, rebuild: Callable[[], Any], args: argparse.Namespace) -> ConfigWatcher:
    """Start following --watch FILE, rebuilding the record with `rebuild` at each change."""
    watcher = ConfigWatcher(door, args.watch, rebuild,
                            interval=args.watch_interval, rank_thread=app.state.rank_thread)
    door.watcher = watcher
    watcher.start()
    return watcher


def _stopped(signum: int, frame: FrameType | None) -> None:
    """Re-raised by uvicorn after its graceful shutdown: nothing left to do."""


def _start_ranks(context: Context[Any], package: str, record: Any, args: argparse.Namespace,
                 facts: Facts) -> Any:
    try:
        from configbags.serve.ranks import RankGroup
    except ImportError as exc:
        raise ConfigError(f"--ranks needs torch, from the kv extra ({exc}): pip install 'configbags[kv]'") from None
    ranks = RankGroup(context, package, args.ranks, timeout=args.rank_timeout)
    try:
        ranks.start(record, role=args.role, facts=facts)
    except LayoutError as exc:
        ranks.stop(grace_s=0.5)
        raise ConfigError(f"{exc}; with --ranks {args.ranks}, give parallel sizes whose product is "
                          f"{args.ranks} (e.g. --tp-size {args.ranks})") from None
    except ConfigError as exc:
        # a rank that stalls or dies before the group is up: the server does not start
        # half-formed; the rank's process is ended with the others
        ranks.stop(grace_s=0.5)
        raise ConfigError(f"{exc}; the rank group of --ranks {args.ranks} did not come up, so the server "
                          f"did not start") from None
    except BaseException:
        ranks.stop(grace_s=0.5)
        raise
    return ranks

"""Per destination, race for the ephemeral running node; run what we win, stand by for the rest.

One thread reconciles what ZooKeeper says with what this process runs, on every watch event,
connection change and ``tick_s``:

1. Not connected (SUSPENDED or LOST): stop every local destination. The connection listener
   has already revoked the fence, so workers were refused before this.
2. Register (again, after a new session) under ``cluster`` and each ``destinations/{d}/cluster``.
3. Per destination, read the running node (leaving a watch on it):
   * ours and running here: nothing to do, unless its worker ended (fenced: stop it and look
     again next round; failed: stop it, give the node up, wait ``retry_delay_s`` before racing
     again, so that another process may try);
   * ours but not running here (reconnected within the same session): start it;
   * someone else's but running here: stop it at once (we lost it);
   * free: race by creating it, unless this process already runs its share
     (``ceil(destinations / live servers)``), in which case it waits ``balance_delay_s`` first
     so that a process with fewer destinations wins.
4. Balance: a process running more than its share for ``balance_delay_s`` gives one
   destination up (stopped gracefully, cursor flushed, node deleted) for a standby to take.

The destination set follows the configuration (``set_destinations``, between rounds): a
removed destination is given up gracefully and unregistered; an added one is registered
and raced for; the share follows the new count, so every process applying the same file
converges on a balanced cluster.

Starting a destination means granting the fence, then starting instance and worker; losing
it means revoking the fence first, then stopping them (their final cursor write is refused).
A graceful give-up stops them while still owning, so the cursor is written, then deletes the
node.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal

from kazoo.client import KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

from bridge.backoff import Backoff
from bridge.exceptions import BridgeError
from bridge.ha.base import DestinationHost, RunningInfo
from bridge.ha.exceptions import FencedOut, HaError
from bridge.ha.fencing import ZkFence
from bridge.ha.paths import ZkLayout
from bridge.ha.registration import Registration
from bridge.ha.session import ZkSession

log = logging.getLogger(__name__)

TICK_S = 0.5
# The longest wait after failed rounds: short, as a failed round may be a take-over not done.
RETRY_MAX_S = 10.0
BALANCE_DELAY_S = 2.0
RETRY_DELAY_S = 30.0

Role = Literal["active", "standby"]
RoleListener = Callable[[str, Role], None]


class Election:
    def __init__(
        self,
        session: ZkSession,
        layout: ZkLayout,
        node: RunningInfo,
        destinations: Sequence[str],
        *,
        host: DestinationHost,
        fence: ZkFence,
        on_role: RoleListener | None = None,
        tick_s: float = TICK_S,
        balance_delay_s: float = BALANCE_DELAY_S,
        retry_delay_s: float = RETRY_DELAY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._layout = layout
        self.node = node
        self.destinations = tuple(destinations)
        self._host = host
        self._fence = fence
        self._on_role = on_role
        self.tick_s = tick_s
        self.balance_delay_s = balance_delay_s
        self.retry_delay_s = retry_delay_s
        self._clock = clock
        self.registration = Registration(session, layout, node.address, self.destinations)
        self._active: list[str] = []  # in the order taken: the newest is given up first
        self._free_since: dict[str, float] = {}
        self._not_before: dict[str, float] = {}
        self._over_since: float | None = None
        self.failures: dict[str, BaseException] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._round_lock = threading.Lock()  # a set change waits for the round to end

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("election already started")
        self._session.add_listener(self._on_state)
        self.registration.ensure()
        for destination in self.destinations:
            self._set_role(destination, "standby")
        self._thread = threading.Thread(target=self._loop, name="ha-election", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Give every destination up gracefully (cursor written, node deleted)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        for destination in reversed(self.active()):
            self._give_up(destination, "shutting down")
        self.registration.remove()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def active(self) -> list[str]:
        with self._lock:
            return list(self._active)

    def wake(self) -> None:
        self._wake.set()

    def set_destinations(self, destinations: Sequence[str]) -> None:
        """Race for ``destinations`` from now on: each one left out is given up gracefully
        (stopped with its cursor written, running node deleted) and unregistered; each new
        one is registered and raced for from the next round, which comes at once."""
        new = tuple(destinations)
        with self._round_lock:
            removed = [d for d in self.destinations if d not in new]
            added = [d for d in new if d not in self.destinations]
            for destination in removed:
                if destination in self.active():
                    self._give_up(destination, "removed from the configuration")
                for pending in (self._free_since, self._not_before, self.failures):
                    pending.pop(destination, None)
            self.destinations = new
            self.registration.set_destinations(new)
            for destination in added:
                self._set_role(destination, "standby")
        self._wake.set()

    # -- the loop ----------------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        """kazoo's thread: fence off at once, let the loop do the stopping."""
        if state != KazooState.CONNECTED:
            self._fence.revoke_all()
        self._wake.set()

    def _watch(self, _event: object) -> None:
        self._wake.set()

    def _loop(self) -> None:
        """A round per tick or ZooKeeper event; after a failed round the wait grows (the shared
        back-off, up to ``RETRY_MAX_S``) so a ZooKeeper in trouble costs a few lines a minute,
        and an unexpected error's traceback is logged once."""
        retry = Backoff(self.tick_s, max(RETRY_MAX_S, self.tick_s))
        traced: set[type[Exception]] = set()
        while not self._stopping.is_set():
            wait_s = self.tick_s
            try:
                with self._round_lock:
                    self._round()
                retry.reset()
            except Exception as exc:
                wait_s = retry.next()
                unexpected = not isinstance(exc, HaError)
                log.warning(
                    "HA round failed, trying again in %.1f s: %s%s",
                    wait_s,
                    f"{type(exc).__name__}: " if unexpected else "",
                    exc,
                    exc_info=unexpected and type(exc) not in traced,
                )
                traced.add(type(exc))
            self._wake.wait(wait_s)
            self._wake.clear()

    def _round(self) -> None:
        # Step 1
        if not self._session.connected:
            for destination in reversed(self.active()):
                self._lose(destination, "the ZooKeeper session is suspended or lost")
            return
        # Step 2
        self.registration.ensure()
        share = math.ceil(len(self.destinations) / max(1, self.registration.live_servers()))
        # Step 3
        for destination in self.destinations:
            if self._stopping.is_set():
                return
            self._reconcile(destination, share)
        # Step 4
        self._balance(share)

    def _reconcile(self, destination: str, share: int) -> None:
        started = self._clock()
        owner = self._owner(destination)
        mine = owner is not None and owner == self._session.session_id
        if destination in self.active():
            if not mine:
                self._lose(destination, "its running node is gone or taken by another process")
            elif self._host.destination_ended(destination):
                self._ended(destination)
            else:
                self._fence.renew(destination, started)
            return
        if mine:
            self._take(destination, started)  # still ours after a reconnect, same session
            return
        if owner is not None:
            self._free_since.pop(destination, None)
            return
        if self._may_race(destination, share):
            started = self._clock()
            if self._create(destination):
                self._take(destination, started)

    def _owner(self, destination: str) -> int | None:
        """The session owning the running node (watched), None if it is free."""
        path = self._layout.running(destination)
        with self._session.errors(f"reading {path}"):
            stat = self._session.client.exists(path, watch=self._watch)
        return None if stat is None else int(stat.ephemeralOwner)

    def _may_race(self, destination: str, share: int) -> bool:
        now = self._clock()
        if now < self._not_before.get(destination, 0.0):
            return False
        if len(self.active()) < share:
            return True
        since = self._free_since.setdefault(destination, now)
        return now - since >= self.balance_delay_s

    def _create(self, destination: str) -> bool:
        path = self._layout.running(destination)
        with self._session.errors(f"creating {path}"):
            try:
                self._session.client.create(path, self.node.dumps(), ephemeral=True, makepath=True)
            except NodeExistsError:
                return False
        return True

    def _balance(self, share: int) -> None:
        active = self.active()
        if len(active) <= share:
            self._over_since = None
            return
        now = self._clock()
        if self._over_since is None:
            self._over_since = now
        elif now - self._over_since >= self.balance_delay_s:
            self._over_since = None
            destination = active[-1]
            self._give_up(destination, f"running more than its share of {share}")
            self._not_before[destination] = now + self.balance_delay_s
            self._free_since[destination] = now

    # -- transitions -------------------------------------------------------------------------

    def _take(self, destination: str, since: float) -> None:
        self._free_since.pop(destination, None)
        self._fence.grant(destination, since)
        try:
            self._host.start_destination(destination)
        except Exception as exc:
            log.error("destination %s: could not start (%s); giving it up", destination, exc)
            self._fence.revoke(destination)
            self._stop_host(destination)
            self._release(destination)
            self._not_before[destination] = self._clock() + self.retry_delay_s
            return
        with self._lock:
            self._active.append(destination)
        self._set_role(destination, "active")
        log.info("destination %s: active on %s", destination, self.node.address)

    def _lose(self, destination: str, reason: str) -> None:
        """Lost: refuse first, then stop (the final cursor write is refused too)."""
        self._fence.revoke(destination)
        self._forget(destination)
        log.warning("destination %s: lost (%s); stopped producing and acking", destination, reason)
        self._stop_host(destination)

    def _give_up(self, destination: str, reason: str) -> None:
        """Graceful: stop while still owning (the cursor is written), then free the node."""
        log.info("destination %s: giving it up (%s)", destination, reason)
        self._stop_host(destination)
        self._fence.revoke(destination)
        self._forget(destination)
        self._release(destination)

    def _ended(self, destination: str) -> None:
        error = self._host.destination_error(destination)
        if isinstance(error, FencedOut):
            self._lose(destination, error.reason)
            return
        if error is not None:
            self.failures[destination] = error
        self._give_up(destination, f"its worker stopped: {error}")
        self._not_before[destination] = self._clock() + self.retry_delay_s

    def _forget(self, destination: str) -> None:
        with self._lock:
            if destination in self._active:
                self._active.remove(destination)
        self._set_role(destination, "standby")

    def _stop_host(self, destination: str) -> None:
        try:
            self._host.stop_destination(destination)
        except (BridgeError, OSError) as exc:
            log.warning("destination %s: stopping it failed: %s", destination, exc)

    def _release(self, destination: str) -> None:
        """Delete the running node if it is ours, so that a standby can take over at once."""
        path = self._layout.running(destination)
        client = self._session.client
        try:
            _, stat = client.get(path)
            if stat.ephemeralOwner == self._session.session_id:
                client.delete(path, version=stat.version)
        except NoNodeError:
            pass
        except Exception as exc:  # the node expires with the session anyway
            log.warning("could not delete %s: %s", path, exc)

    def _set_role(self, destination: str, role: Role) -> None:
        if self._on_role is not None:
            self._on_role(destination, role)

"""The configuration of a running bridge, changed while it runs: the file watched by
``canal-bridge run`` (polled by content, and on SIGHUP) and the admin API's ``apply_config``.

Every new text is validated first as ``canal-bridge validate`` would, then compared with the
running configuration (``bridge.config.config_change``); a bad one is refused as a whole and
what runs stays as it was. A good one is applied destination by destination
(``Runner.apply_change``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.config import BridgeConfig, ConfigChange, config_change, config_from_text
from bridge.exceptions import ActionRefused, BridgeError, ConfigError
from bridge.runner.config_file import digest, read_text, write_atomically

if TYPE_CHECKING:
    from bridge.runner.runner import Runner

log = logging.getLogger(__name__)


class LiveConfig:
    def __init__(self, runner: Runner, path: Path | None) -> None:
        """``path``: the file the running configuration was read from; None for a runner
        built from a config object alone (which can check new texts, not write them)."""
        self._runner = runner
        self.path = path
        self._source = str(path) if path is not None else "<config>"
        # The content last acted on: a poll acts only on content not seen before.
        self._seen = digest(read_text(path)) if path is not None else None
        # One change at a time (the file watch and the admin API): each is compared with
        # the configuration the one before it left running.
        self._lock = threading.Lock()

    def check(self, text: str) -> tuple[BridgeConfig, ConfigChange]:
        """The new configuration and what applying it changes; ``ConfigError`` (its
        ``InvalidConfig`` lists every problem) when it does not validate or changes a
        section a running process cannot."""
        new = config_from_text(text, source=self._source)
        return new, config_change(self._runner.config, new, self._source)

    def apply(self, text: str) -> ConfigChange:
        """Check ``text``, write it to the file, then apply it."""
        if self.path is None:
            raise ActionRefused(
                "this bridge was started without a configuration file: restart it with "
                "canal-bridge run --config FILE to change its configuration"
            )
        with self._lock:
            new, change = self.check(text)
            write_atomically(self.path, text)
            self._seen = digest(text)
            self._runner.apply_change(new, change)
        log.info("configuration applied: %s", change.describe())
        return change

    def poll(self, *, force: bool = False) -> None:
        """Apply the file if its content changed (or ``force``: SIGHUP). A file that cannot
        be read or does not validate is logged once, one line per problem as ``validate``
        prints them, and the running configuration stays; nothing here raises."""
        if self.path is None:
            return
        with self._lock:
            try:
                text = read_text(self.path)
                seen, self._seen = self._seen, digest(text)
            except ConfigError as exc:
                seen, self._seen = self._seen, str(exc)
                if self._seen != seen or force:
                    _refused(self.path, exc)
                return
            if self._seen == seen and not force:
                return
            try:
                new, change = self.check(text)
            except ConfigError as exc:
                _refused(self.path, exc)
                return
            try:
                self._runner.apply_change(new, change)
            except BridgeError as exc:
                log.error("configuration reload failed part way: %s", exc)
                return
        log.info("configuration reloaded: %s", change.describe())


def _refused(path: Path, exc: ConfigError) -> None:
    for line in str(exc).splitlines():
        log.error("%s", line.strip())
    log.error("%s: the running configuration is unchanged", path)

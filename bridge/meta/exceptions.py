"""Errors of the meta manager: batch order (canal's messages), lifecycle, persisted files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bridge.exceptions import BridgeError

if TYPE_CHECKING:
    from bridge.meta.base import ClientIdentity


class MetaError(BridgeError):
    """Base class of every error raised by ``bridge.meta``."""


class MetaNotRunning(MetaError):
    def __init__(self) -> None:
        super().__init__("meta manager is not running; start() it first")


class MetaAlreadyStarted(MetaError):
    def __init__(self) -> None:
        super().__init__("meta manager is already running; stop() it before start()")


class NotSubscribed(MetaError):
    def __init__(self, client: ClientIdentity) -> None:
        super().__init__(
            f"client {client.client_id} of destination {client.destination!r} is not subscribed"
        )
        self.client = client


class UnknownBatch(MetaError):
    """A batch id that is not outstanding: never handed out, or already acked/rolled back."""

    def __init__(self, client: ClientIdentity, batch_id: int) -> None:
        super().__init__(
            f"batchId:{batch_id} is not exist for clientId:{client.client_id} of destination "
            f"{client.destination!r} (already acked or rolled back?)"
        )
        self.client = client
        self.batch_id = batch_id


class BatchOutOfOrder(MetaError):
    """Batches are acked/rolled back oldest first; canal's message, kept verbatim."""

    def __init__(self, batch_id: int, first_batch_id: int) -> None:
        super().__init__(f"batchId:{batch_id} is not the firstly:{first_batch_id}")
        self.batch_id = batch_id
        self.first_batch_id = first_batch_id


class MetaCodecError(MetaError):
    """Persisted meta data does not have the expected shape; ``where`` is a JSON path."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


class CorruptMetaFile(MetaError):
    """A ``meta.dat`` cannot be read back; never silently reset, as that would lose progress."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"{path} is not a valid meta file ({reason}). canal-bridge replaces it atomically, "
            "so it was probably copied or edited non-atomically, or the disk is damaged. "
            "Restore it from a backup or repair the JSON; or delete it to start this "
            "destination from its configured start position (acked progress is then lost)."
        )
        self.path = path
        self.reason = reason


class MetaWriteFailed(MetaError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot write meta file {path}: {reason}")
        self.path = path
        self.reason = reason


class MetaStoreUnavailable(MetaError):
    """The remote meta store (ZooKeeper) did not answer a read or a write; ``where`` is the
    node path."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"meta store unavailable at {where}: {reason}")
        self.where = where
        self.reason = reason


class CorruptCursor(MetaError):
    """A cursor node in ZooKeeper does not hold canal's LogPosition JSON; never reset silently."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(
            f"{where} is not a valid cursor ({reason}). Repair the JSON, or delete the node to "
            "start this destination from its configured start position (acked progress is "
            "then lost)."
        )
        self.where = where
        self.reason = reason

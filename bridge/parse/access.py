"""How the binlog and snapshot readers reach the source, without the configuration's models.

The readers run in child processes (``parser_process``, a snapshot reader's process), where
importing the configuration (pydantic, every model) cost each process 13 MB. So the readers
take a ``Source``: the destination's ``SourceConfig`` in the instance's process, and in a
child the ``SourceAccess`` copy of it that the parent pickled into the child's spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class Secret(Protocol):
    """A secret that says its value only when asked (pydantic's ``SecretStr``)."""

    def get_secret_value(self) -> str: ...


class Tls(Protocol):
    """``source.ssl``: TLS to the source, as the MySQL client's ssl-* options."""

    @property
    def ca(self) -> str | None: ...
    @property
    def cert(self) -> str | None: ...
    @property
    def key(self) -> str | None: ...
    @property
    def verify_cert(self) -> bool: ...
    @property
    def verify_identity(self) -> bool: ...


class Source(Protocol):
    """``SourceConfig`` as the readers use it."""

    @property
    def address(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def username(self) -> str: ...
    @property
    def password(self) -> Secret | None: ...
    @property
    def slave_id(self) -> int: ...
    @property
    def ssl(self) -> Tls | None: ...
    @property
    def connect_timeout_s(self) -> float: ...


@dataclass(frozen=True, slots=True)
class HiddenSecret:
    """A ``Secret`` whose value no repr shows (it travels to a child in its pickled spec)."""

    value: str = field(repr=False)

    def get_secret_value(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A plain copy of a ``Tls``."""

    ca: str | None
    cert: str | None
    key: str | None
    verify_cert: bool
    verify_identity: bool


@dataclass(frozen=True, slots=True)
class SourceAccess:
    """A plain copy of a ``Source`` for a child process: ``SourceAccess.of(source)``."""

    address: str
    host: str
    port: int
    username: str
    password: HiddenSecret | None
    slave_id: int
    ssl: TlsFiles | None
    connect_timeout_s: float

    @classmethod
    def of(cls, source: Source) -> SourceAccess:
        tls = source.ssl
        return cls(
            address=source.address,
            host=source.host,
            port=source.port,
            username=source.username,
            password=None
            if source.password is None
            else HiddenSecret(source.password.get_secret_value()),
            slave_id=source.slave_id,
            ssl=None
            if tls is None
            else TlsFiles(tls.ca, tls.cert, tls.key, tls.verify_cert, tls.verify_identity),
            connect_timeout_s=source.connect_timeout_s,
        )

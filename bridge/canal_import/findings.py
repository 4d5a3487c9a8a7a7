"""What an import found besides the mapped values: keys it could not map (with the reason),
keys whose meaning changed on the way, values it could not convert, and the environment
variables the output refers to instead of a secret."""

from __future__ import annotations

from dataclasses import dataclass, field

# Parts of a key naming a secret: their values are never read into messages or output.
SECRET_KEY_WORDS = ("password", "passwd", "pwd", "secret", "accesskey", "token", "jaas")


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS)


@dataclass(frozen=True)
class EnvReference:
    """A ``${NAME}`` placeholder the output holds instead of a secret (``loading`` resolves
    it from the environment when the config is read)."""

    name: str

    def __str__(self) -> str:
        return "${" + self.name + "}"


@dataclass(frozen=True)
class Note:
    origin: str  # the file's label: canal.properties, example/instance.properties
    key: str
    text: str

    def line(self) -> str:
        return f"{self.origin}: {self.key} -- {self.text}"


@dataclass
class Findings:
    unmapped: list[Note] = field(default_factory=list)
    changed: list[Note] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def secret(self, name: str, stands_for: str) -> EnvReference:
        """A placeholder for a secret, remembered so the output can say what to export."""
        self.env[name] = stands_for
        return EnvReference(name)

    def bad_value(self, origin: str, key: str, value: str, expected: str) -> None:
        shown = "(hidden)" if is_secret_key(key) else repr(value)
        self.problems.append(f"{origin}: {key} = {shown} is not {expected}; fix it in canal's conf")

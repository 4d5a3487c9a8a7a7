"""``canal-bridge run``: the destinations of one process, and the operator's actions on them."""

from bridge.runner.main import run_until_signalled
from bridge.runner.runner import Runner, build_instance, build_meta, parser_placement

__all__ = ["Runner", "build_instance", "build_meta", "parser_placement", "run_until_signalled"]

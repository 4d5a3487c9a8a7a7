"""``canal-bridge import-canal``: a canal deployer's ``conf/`` folder (canal.properties and each
destination's instance.properties) as an equivalent destinations.yaml.

``importer`` maps the folder (``conf_dir`` reads it, ``properties`` parses the files the way
canal's Java and Spring do, ``kafka`` / ``server`` / ``destination`` map the sections, and
``unmapped`` says why the remaining keys have no place); ``render`` writes the YAML with the
findings as a comment block and checks it as ``validate`` would. Secrets are never copied:
they become ``${VAR}`` references.
"""

from bridge.canal_import.exceptions import (
    CanalConfUnreadable,
    CanalImportError,
    UnsupportedServerMode,
)
from bridge.canal_import.findings import EnvReference, Findings, Note
from bridge.canal_import.importer import CanalImport, import_canal
from bridge.canal_import.properties import Settings, parse_properties
from bridge.canal_import.render import render, validation_problems

__all__ = [
    "CanalConfUnreadable",
    "CanalImport",
    "CanalImportError",
    "EnvReference",
    "Findings",
    "Note",
    "Settings",
    "UnsupportedServerMode",
    "import_canal",
    "parse_properties",
    "render",
    "validation_problems",
]

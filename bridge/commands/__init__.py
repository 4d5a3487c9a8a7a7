"""The command line's tools that are not the bridge itself (``bridge.cli`` maps them):
``status``, ``snapshot`` and ``schema``, each reading or asking a running destination."""

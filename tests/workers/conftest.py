"""The workers' fixtures: a browser of the module's own, the scripted model, the recording site."""

from tests.support.jobs import external_browser, model, site  # noqa: F401  (fixtures)

"""Project exception families, and the one way a command reports them.

Every failure a user can act on raises one of these with a message that says what to do.
Batch drivers catch ``ArgusError`` per document, record it and go on.
"""


class ArgusError(Exception):
    """Base class of every error this project raises on purpose."""


class InputError(ArgusError):
    """A source document cannot be read or is not a usable complaint text."""


class ConfigError(ArgusError):
    """The configuration (file, flags or environment) is invalid or incomplete."""


class CredentialsError(ConfigError):
    """A model refused the credentials it was called with, or none were set: a configuration error, which
    no retry can mend (``argus.models.concurrency.call_with_retries`` raises it at the first such answer)."""


class PreflightError(ConfigError):
    """A model of the run cannot be called: its key is not set, its server does not answer, or its local
    GGUF file is missing (``argus.models.preflight``), found before the first document or trial."""


class LMCallError(ArgusError):
    """A language-model call failed after its retries."""


class ProgramOutputError(ArgusError):
    """A program's output stayed invalid after the configured retries."""


class SourceError(ArgusError):
    """A remote source (CourtListener) refused or failed a request."""


def fails_cleanly(command):
    """Wrap a typer command: a project error becomes one line on stderr and exit status 2, not a traceback."""
    import functools

    @functools.wraps(command)
    def run(*args, **kwargs):
        import typer

        try:
            return command(*args, **kwargs)
        except ArgusError as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from None

    return run

"""Storage and tracking URLs never show a password: ``redact_url`` masks it (an empty user name and query
parameters too) and ``scrub_secrets`` refuses to write a value holding one."""

from __future__ import annotations

import pytest

from optimizers.frontier import scrub_secrets
from optimizers.storage import redact_url

SECRET = "s3cret"
LEAKY = [  # (url, redacted)
    ("postgresql://:s3cret@db/x", "postgresql://:***@db/x"),
    ("postgresql://user:s3cret@db/x", "postgresql://user:***@db/x"),
    ("postgresql+psycopg://user:s3cret@db:5432/x", "postgresql+psycopg://user:***@db:5432/x"),
    ("postgresql://db/x?password=s3cret&sslmode=require", "postgresql://db/x?password=***&sslmode=require"),
    ("postgresql://user@db/x?sslpassword=s3cret", "postgresql://user@db/x?sslpassword=***"),
    ("mysql://user@db/x?charset=utf8&pass=s3cret", "mysql://user@db/x?charset=utf8&pass=***"),
    ("mssql://user@db/x?driver=odbc&PWD=s3cret", "mssql://user@db/x?PWD=***&driver=odbc"),  # keys sorted
]
CLEAN = ["postgresql://user@db/x", "postgresql://db/x?sslmode=require", "http://127.0.0.1:5000",
         "sqlite:///runs/optuna.db", "file:///tmp/mlruns", "./mlruns"]


@pytest.mark.parametrize("url, redacted", LEAKY)
def test_redact_url_hides_the_password(url, redacted):
    assert redact_url(url) == redacted


@pytest.mark.parametrize("url", CLEAN)
def test_redact_url_leaves_a_url_without_a_password(url):
    assert redact_url(url) == url


@pytest.mark.parametrize("url", [u for u, _ in LEAKY])
def test_redact_url_in_an_error_message(url):
    """Error texts are redacted too (``redact_url(str(exc))``): a URL inside a sentence, quoted or not."""
    for text in (f"cannot connect to {url}: timeout", f"(OperationalError) '{url}', retrying", f"{url}\n"):
        out = redact_url(text)
        assert SECRET not in out and "***" in out and out.startswith(text[:text.index(url)])


@pytest.mark.parametrize("url", [u for u, _ in LEAKY])
def test_scrub_secrets_refuses_a_url_password(url):
    for text in (url, f"the storage is {url} (shared by the workers)"):
        with pytest.raises(ValueError, match=r"credential at \$\.run\.storage") as err:
            scrub_secrets({"run": {"storage": text}})
        assert SECRET not in str(err.value)


@pytest.mark.parametrize("url", CLEAN + ["see http://docs.example.com/a?passage=3&password_hint=none"])
def test_scrub_secrets_keeps_a_url_without_a_password(url):
    data = {"run": {"storage": url, "note": f"the storage is {url} (shared by the workers)"}}
    assert scrub_secrets(data) == data

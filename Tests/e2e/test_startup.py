"""Starting the server the way a service manager would: from an unrelated directory."""

from conftest import REPO


def test_demo_starts_from_any_working_directory(sightline, tmp_path):
    # systemd, cron and installed copies do not run from the source tree; the demo
    # source's built-in template must not depend on the working directory.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert elsewhere.resolve() != REPO.resolve()
    server = sightline(source="demo", cwd=elsewhere)
    state = server.wait_live()
    assert any(t.get("name") == "demo" for t in state.get("templates", [])), state.get("templates")

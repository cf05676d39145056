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


HEAP_RESERVE = 64 << 20  # glibc's per-thread arena heaps: 64 MiB reserved, 64 MiB aligned (64-bit)


def arena_heaps(pid: int) -> int:
    """glibc arena heaps in /proc/PID/maps: an aligned anonymous rw-p mapping followed by its
    ---p reserve, 64 MiB in all (the main arena lives in the brk heap and is not counted)."""
    rows = [line.split() for line in open(f"/proc/{pid}/maps").read().splitlines()]
    spans = [(tuple(int(x, 16) for x in row[0].split("-")), row[1], len(row)) for row in rows]
    heaps = 0
    for i, ((start, end), perms, fields) in enumerate(spans):
        if start % HEAP_RESERVE or perms != "rw-p" or fields != 5:
            continue
        if i + 1 < len(spans) and spans[i + 1][0][0] == end and spans[i + 1][1] == "---p":
            end = spans[i + 1][0][1]
        heaps += end - start == HEAP_RESERVE
    return heaps


def watch_briefly(server, frames: int = 30) -> None:
    with server.ws() as ws:
        binary = 0
        while binary < frames:
            binary += isinstance(ws.recv(timeout=10), bytes)


def test_the_server_keeps_to_two_malloc_arenas_unless_the_user_says_otherwise(sightline):
    # Each thread's own arena keeps the pages it freed: two arenas (the main one and one
    # more) for all of the server's threads saved about 4.5 MiB on the demo at the same CPU.
    server = sightline(source="demo")
    server.wait_live()
    watch_briefly(server)
    assert arena_heaps(server.pid) <= 1
    server.stop_checked()
    # glibc's own MALLOC_ARENA_MAX stands when set (and shows the count above can grow).
    server = sightline(source="demo", env={"MALLOC_ARENA_MAX": "8"})
    server.wait_live()
    watch_briefly(server)
    assert arena_heaps(server.pid) >= 2
    server.stop_checked()

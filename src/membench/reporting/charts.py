"""The charts' images: one definition per chart.

The Vega-Lite templates under .dvc/plots/ are what `dvc plots show/diff` draws, and the
report's SVGs are the same templates, filled by DVC's own renderer and drawn offline by
vl-convert (a pinned Rust/Deno build of Vega). Text is measured with Source Sans Pro from
the pinned `font-source-sans-pro` package, never a system font, so the bytes depend only on
the rows and the pinned packages (docs/reproducibility.md). Not core: it reads dvc.yaml and
the templates, and loads the renderer."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path


class ChartRenderError(ValueError):
    """The renderer would not reproduce the committed images on this machine."""


FONT_FAMILY = "Source Sans Pro"
# sha256 of PROBE_SPEC drawn with the pinned vl-convert and font: another value means a
# font on this machine shadows the pinned one (fonts are found by family name), or a
# different vl-convert, and the committed SVGs would not be reproduced byte for byte.
PROBE_SPEC = {"data": {"values": [{"a": "Wide WWW text", "b": 1}]}, "mark": "bar",
              "encoding": {"y": {"field": "a", "type": "nominal"},
                           "x": {"field": "b", "type": "quantitative"}},
              "config": {"font": FONT_FAMILY}}
PROBE_SHA256 = "c6d585ceadd6cb3635253750912b8c360ecf9f6ec5c3935008742393f0a3ae10"


def declared_charts(definitions: Path = Path("dvc.yaml"),
                    templates: Path | None = None) -> list[tuple[str, Path, str, str]]:
    """Data file, template, x and y of every `plots:` entry of `definitions` (dvc.yaml), in
    declared order. With `templates`, a template outside that directory is an error, so a
    stage that depends on the directory cannot miss a template change."""
    import yaml

    out = []
    for plot in yaml.safe_load(definitions.read_text(encoding="utf-8"))["plots"]:
        (path, props), = plot.items()
        template = definitions.parent / props["template"]
        if templates is not None and not template.resolve().is_relative_to(templates.resolve()):
            raise ChartRenderError(f"{definitions}: the template of {path}, {template}, "
                                   f"is not under {templates}")
        out.append((path, template, props["x"], props["y"]))
    return out


def chart(name: str, definitions: Path = Path("dvc.yaml"),
          templates: Path | None = None) -> tuple[str, Path, str, str]:
    """The declared chart whose data file is named `name`."""
    for declared in declared_charts(definitions, templates):
        if Path(declared[0]).name == name:
            return declared
    raise ChartRenderError(f"{definitions} declares no plot for {name}")


def chart_svg(name: str, rows: Sequence[dict], definitions: Path = Path("dvc.yaml"),
              templates: Path | None = None) -> str:
    """The report's image of the chart whose data file is `name`: its dvc.yaml template,
    filled as `dvc plots show` fills it, drawn offline."""
    path, template, x, y = chart(name, definitions, templates)
    return render_svg(filled_spec(template, rows, path, x, y))


def report_images(report: Path, definitions: Path = Path("dvc.yaml"),
                  templates: Path | None = None) -> list[tuple[str, str]]:
    """(caption, path relative to the report) of every declared chart's SVG, which the plots
    stage writes beside its data file; the caption is the template's title."""
    images = []
    for path, template, _, _ in declared_charts(definitions, templates):
        title = json.loads(template.read_text(encoding="utf-8")).get("title", Path(path).stem)
        caption = title.get("text", Path(path).stem) if isinstance(title, dict) else title
        svg = Path(path).with_suffix(".svg")
        images.append((caption, Path(os.path.relpath(svg, report.parent)).as_posix()))
    return images


def filled_spec(template: Path, rows: Sequence[dict], plot_path: str, x: str, y: str,
                rev: str = "workspace") -> dict:
    """The Vega-Lite spec `dvc plots show` draws for `plot_path`: DVC's own renderer fills
    the template with the rows tagged by revision, as it does for the workspace."""
    from dvc_render.vega import VegaRenderer

    datapoints = [{**row, "rev": rev, "filename": plot_path, "field": y} for row in rows]
    return VegaRenderer(datapoints, plot_path, template=str(template),
                        x=x, y=y).get_filled_template()


@cache
def _converter():
    import vl_convert

    font_dir = resources.files("font_source_sans_pro") / "files"
    vl_convert.register_font_directory(str(font_dir))
    probe = vl_convert.vegalite_to_svg(PROBE_SPEC)
    digest = hashlib.sha256(probe.encode()).hexdigest()
    if digest != PROBE_SHA256:
        raise ChartRenderError(
            f"vl-convert measured text differently ({digest[:12]}): a font named "
            f"{FONT_FAMILY!r} installed on this machine, or an unpinned vl-convert, would "
            "change the committed SVGs; remove that font or pin the versions in pyproject")
    return vl_convert


def render_svg(spec: dict) -> str:
    """The SVG of a filled spec, in the pinned font; the same bytes on every machine."""
    spec = json.loads(json.dumps(spec))
    spec.setdefault("config", {})["font"] = FONT_FAMILY
    return _converter().vegalite_to_svg(spec)

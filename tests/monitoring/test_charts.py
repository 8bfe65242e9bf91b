"""The pure SVG charts (trainer_portal.charts): shapes, scaling, gaps, escaping, and no inline style or script."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from trainer_portal import charts

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == SVG + "svg"
    assert "style" not in svg and "<script" not in svg
    return root


def texts(root: ET.Element) -> list[str]:
    return [el.text for el in root.iter(SVG + "text")]


def test_stacked_bar_splits_the_width_by_share_and_labels_each_part():
    root = parse(charts.stacked_bar([charts.Part("Running", 30, "#0072B2"), charts.Part("Queued", 10),
                                     charts.Part("Failed", 0)], title="Mix"))

    bars = [el for el in root.iter(SVG + "rect") if el.get("y") == "4"]
    assert [float(el.get("width")) for el in bars] == [0.75 * charts.WIDTH, 0.25 * charts.WIDTH]
    assert bars[0].get("fill") == "#0072B2" and bars[1].get("fill") == charts.PALETTE[1]
    assert texts(root) == ["Running", "30 · 75 %", "Queued", "10 · 25 %"]  # a zero part is left out
    assert root.find(SVG + "desc").text == "Running 30, Queued 10"


def test_stacked_bar_without_data_says_so():
    assert texts(parse(charts.stacked_bar([charts.Part("Running", 0)], title="Mix"))) == ["No data"]


def test_text_is_escaped():
    svg = charts.stacked_bar([charts.Part('<script>alert("x")</script>', 1)], title="a & b")

    root = parse(svg)
    assert root.find(SVG + "title").text == "a & b"
    assert '<script>alert("x")</script>' in texts(root)


def test_line_chart_scales_to_a_readable_top_and_leaves_gaps():
    series = [charts.Series("p50", (10.0, None, 30.0, 40.0)), charts.Series("p95", (50.0, 80.0, None, None),
                                                                            dashed=True)]
    root = parse(charts.line_chart(series, ["00:00", "06:00", "12:00", "18:00"], title="Wait", height=150))

    # 80 s rounds up to a 2 min axis; gridlines at 0, 60 s and 2 min.
    assert texts(root)[:3] == ["0 s", "60 s", "2 min"]
    assert {"00:00", "06:00", "18:00"} <= set(texts(root))
    lines = list(root.iter(SVG + "polyline"))
    assert len(lines) == 2  # p50: one segment after the gap; p95: one segment before
    assert len(lines[0].get("points").split()) == 2 and len(lines[1].get("points").split()) == 2
    assert list(root.iter(SVG + "circle"))  # p50's lone first value is a dot
    assert lines[1].get("stroke-dasharray")
    # y grows downwards: 40 s sits higher than 30 s.
    (p30, p40) = [float(point.split(",")[1]) for point in lines[0].get("points").split()]
    assert p40 < p30


def test_line_chart_refuses_series_of_the_wrong_length():
    with pytest.raises(ValueError, match="has 1 values for 2"):
        charts.line_chart([charts.Series("p50", (1.0,))], ["a", "b"], title="t")


def test_line_chart_without_values_says_no_data():
    assert "No data" in texts(parse(charts.line_chart([], ["a", "b"], title="t")))


@pytest.mark.parametrize(("value", "top"), [(0, 1), (0.7, 1), (1, 1), (1.2, 2), (2.2, 2.5), (3, 5), (7, 10),
                                            (4000, 5000)], ids=lambda v: str(v))
def test_nice_ceiling(value, top):
    assert charts.nice_ceiling(value) == top


@pytest.mark.parametrize(("seconds", "top"), [(0, 2), (45, 60), (61, 120), (3000, 3600), (30000, 43200),
                                              (200000, 345600)], ids=lambda v: str(v))
def test_nice_duration_ceiling(seconds, top):
    assert charts.nice_duration_ceiling(seconds) == top


@pytest.mark.parametrize(("seconds", "label"), [(45, "45 s"), (600, "10 min"), (3 * 3600, "3 h"),
                                                (5400 * 1.5, "2.2 h"), (3 * 86400, "3 d")],
                         ids=["s", "min", "h", "h-fraction", "d"])
def test_duration_label(seconds, label):
    assert charts.duration_label(seconds) == label

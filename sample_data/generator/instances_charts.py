"""The ``chart_value`` instances: bar and line charts (``images/bar_*``, ``images/line_*``)."""

from __future__ import annotations

from .common import rng_for
from .drawing import draw_bar_chart, draw_line_chart, fmt_num
from .ground_truth import Bank, make_instance, wrong_ints


def build_charts(bank: Bank):
    T = "chart_value"
    # bar_01: tallest bar (bbox) ; 01b: all bar tops (point_set)
    size = (640, 480)
    rng = rng_for("bar_01")
    values = rng.sample(range(12, 96), 5)
    cats = ["North", "South", "East", "West", "Central"]
    img, bars = draw_bar_chart(size, "Units sold by region", cats, values, 20)
    f = bank.image("images/bar_01.png", img)
    top = max(bars, key=lambda b: b["value"])
    second = sorted(values)[-2]
    facts = [f"The {b['cat']} bar reaches {b['value']}, its top edge is at y={b['box'][1]}." for b in bars]
    bank.add(
        make_instance(
            "chart_value-001",
            T,
            f,
            size,
            "What is the value of the tallest bar? Give its bounding box.",
            "integer",
            top["value"],
            "bbox",
            top["box"],
            wrong=[second, top["value"] + 5, top["value"] - 2],
            variants=[float(top["value"])],
            facts=facts,
        )
    )
    bank.add(
        make_instance(
            "chart_value-002",
            T,
            f,
            size,
            "Mark the top-centre of every bar. How many bars are there?",
            "integer",
            len(bars),
            "point_set",
            [b["top"] for b in bars],
            wrong=wrong_ints(len(bars)),
            facts=facts,
            distractors=[[b["top"][0], b["box"][3]] for b in bars],
        )
    )

    # bar_02: ranking + bbox_sequence left to right
    size = (800, 600)
    rng = rng_for("bar_02")
    values = rng.sample(range(5, 60), 6)
    cats = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
    img, bars = draw_bar_chart(size, "Monthly sign-ups (thousands)", cats, values, 10, palette=("green",))
    f = bank.image("images/bar_02.png", img)
    rank = sorted(range(6), key=lambda i: -values[i])
    bank.add(
        make_instance(
            "chart_value-003",
            T,
            f,
            size,
            "Rank the bars from the highest to the lowest value, giving their 0-based positions from the left, "
            "and box the bars from left to right.",
            "index_list",
            rank,
            "bbox_sequence",
            [b["box"] for b in bars],
            wrong=[rank[::-1], rank[:2][::-1] + rank[2:]],
            facts=[f"{b['cat']} shows {b['value']} thousand sign-ups." for b in bars],
        )
    )

    # bar_03: max/min bbox_map, difference (number)
    size = (1024, 768)
    rng = rng_for("bar_03")
    values = [v / 2 for v in rng.sample(range(20, 180), 7)]
    cats = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    img, bars = draw_bar_chart(
        size, "Average wait time (minutes)", cats, values, 10, palette=("orange", "blue")
    )
    f = bank.image("images/bar_03.png", img)
    hi_, lo_ = max(bars, key=lambda b: b["value"]), min(bars, key=lambda b: b["value"])
    diff = hi_["value"] - lo_["value"]
    bank.add(
        make_instance(
            "chart_value-004",
            T,
            f,
            size,
            'Box the highest and the lowest bar (keys "max" and "min"). What is the difference between their values?',
            "number",
            diff,
            "bbox_map",
            {"max": hi_["box"], "min": lo_["box"]},
            wrong=[diff + 0.5, diff - 1, hi_["value"] + lo_["value"]],
            variants=[fmt_num(diff)],
            facts=[f"{b['cat']} averages {fmt_num(b['value'])} minutes." for b in bars],
            distractors=[b["box"] for b in bars if b is not hi_ and b is not lo_],
        )
    )

    # bar_04: point at top of C, number
    size = (512, 512)
    rng = rng_for("bar_04")
    values = [v / 4 for v in rng.sample(range(20, 160), 4)]
    cats = ["A", "B", "C", "D"]
    img, bars = draw_bar_chart(size, "Yield per plot (kg)", cats, values, 5, palette=("purple", "green"))
    f = bank.image("images/bar_04.png", img)
    c = bars[2]
    bank.add(
        make_instance(
            "chart_value-005",
            T,
            f,
            size,
            "Mark the top-centre of the bar labelled C. What is its value?",
            "number",
            c["value"],
            "point",
            c["top"],
            wrong=[bars[1]["value"], c["value"] + 0.25, round(c["value"])],
            facts=[f"Plot {b['cat']} yields {fmt_num(b['value'])} kg." for b in bars],
        )
    )

    # bar_05: 1920x1080 JPEG, bars above 50 (bbox_set)
    size = (1920, 1080)
    rng = rng_for("bar_05")
    values = rng.sample([v for v in range(18, 96) if v != 50], 8)
    cats = [f"Q{i + 1}" for i in range(8)]
    img, bars = draw_bar_chart(size, "Revenue per quarter (M$)", cats, values, 10, palette=("blue", "red"))
    f = bank.image("images/bar_05.jpg", img)
    above = [b for b in bars if b["value"] > 50]
    bank.add(
        make_instance(
            "chart_value-006",
            T,
            f,
            size,
            "How many bars exceed 50? Box each of them.",
            "integer",
            len(above),
            "bbox_set",
            [b["box"] for b in above],
            wrong=wrong_ints(len(above)),
            facts=[f"{b['cat']} is at {b['value']}." for b in bars],
            distractors=[b["box"] for b in bars if b["value"] < 50],
        )
    )

    # bar_06: lowest bar as option letter, answer_only mode
    size = (640, 480)
    rng = rng_for("bar_06")
    values = rng.sample(range(10, 80), 5)
    cats = ["Mon", "Tue", "Wed", "Thu", "Fri"]
    img, bars = draw_bar_chart(size, "Tickets closed", cats, values, 10, palette=("yellow",))
    f = bank.image("images/bar_06.png", img)
    low = min(range(5), key=lambda i: values[i])
    bank.add(
        make_instance(
            "chart_value-007",
            T,
            f,
            size,
            "Which day has the fewest tickets closed? A) Mon B) Tue C) Wed D) Thu E) Fri",
            "option_letter",
            "ABCDE"[low],
            "bbox",
            bars[low]["box"],
            wrong=[v for v in "ABCDE" if v != "ABCDE"[low]],
            mode="answer_only",
            variants=["ABCDE"[low].lower()],
            facts=[f"{b['cat']} closed {b['value']} tickets." for b in bars],
        )
    )

    # line_01: all points (point_sequence), max value ; 01b: steepest rise segment
    size = (800, 600)
    rng = rng_for("line_01")
    years = list(range(2016, 2023))
    values = [v + 0.5 for v in rng.sample(range(10, 90), 7)]
    img, pts = draw_line_chart(size, "Median latency (ms)", years, values, 10)
    f = bank.image("images/line_01.png", img)
    facts = [f"In {p['label']} the line is at {fmt_num(p['value'])}." for p in pts]
    bank.add(
        make_instance(
            "chart_value-008",
            T,
            f,
            size,
            "Mark every data point of the line from left to right. What is the highest value?",
            "number",
            max(values),
            "point_sequence",
            [p["pt"] for p in pts],
            wrong=[sorted(values)[-2], max(values) - 0.5, max(values) + 1],
            variants=[str(max(values))],
            facts=facts,
        )
    )
    rises = [(pts[i + 1]["value"] - pts[i]["value"], i) for i in range(6)]
    _, i = max(rises)
    bank.add(
        make_instance(
            "chart_value-009",
            T,
            f,
            size,
            "Give the line segment with the steepest rise between two consecutive points. In which year does it end?",
            "integer",
            pts[i + 1]["label"],
            "segment",
            [pts[i]["pt"], pts[i + 1]["pt"]],
            wrong=[pts[i]["label"], pts[i + 1]["label"] + 1],
            facts=facts,
            distractors=[[pts[j]["pt"], pts[j + 1]["pt"]] for j in range(6) if j != i],
        )
    )

    # line_02: decreasing segments (segment_set) ; 02b: above/below 50 (point_set_map)
    size = (640, 480)
    rng = rng_for("line_02")
    while True:
        values = [rng.choice([v for v in range(8, 95) if v != 50]) for _ in range(8)]
        downs = [i for i in range(7) if values[i + 1] < values[i]]
        ups = [i for i in range(7) if values[i + 1] > values[i]]
        above = [v for v in values if v > 50]
        if 2 <= len(downs) <= 4 and ups and 2 <= len(above) <= 6:
            break
    img, pts = draw_line_chart(
        size, "Weekly active users (k)", [f"W{i + 1}" for i in range(8)], values, 20, colour="blue"
    )
    f = bank.image("images/line_02.png", img)
    facts = [f"Week {p['label']} reads {p['value']}." for p in pts]
    bank.add(
        make_instance(
            "chart_value-010",
            T,
            f,
            size,
            "Give every segment of the line where the value decreases. How many are there?",
            "integer",
            len(downs),
            "segment_set",
            [[pts[i]["pt"], pts[i + 1]["pt"]] for i in downs],
            wrong=wrong_ints(len(downs)),
            facts=facts,
            distractors=[[pts[i]["pt"], pts[i + 1]["pt"]] for i in ups],
        )
    )
    bank.add(
        make_instance(
            "chart_value-011",
            T,
            f,
            size,
            'Mark the data points above 50 and below 50 (keys "above" and "below"). How many points are above 50?',
            "integer",
            len(above),
            "point_set_map",
            {
                "above": [p["pt"] for p in pts if p["value"] > 50],
                "below": [p["pt"] for p in pts if p["value"] < 50],
            },
            wrong=wrong_ints(len(above)),
            facts=facts,
            distractors=[[pts[0]["pt"][0], 40]],
        )
    )

    # line_03: max/min point_map, mapping answer
    size = (1024, 768)
    rng = rng_for("line_03")
    values = rng.sample(range(15, 120), 6)
    img, pts = draw_line_chart(
        size, "Daily orders", ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], values, 20, colour="green"
    )
    f = bank.image("images/line_03.png", img)
    hi_, lo_ = max(pts, key=lambda p: p["value"]), min(pts, key=lambda p: p["value"])
    ans = {"max": hi_["value"], "min": lo_["value"]}
    bank.add(
        make_instance(
            "chart_value-012",
            T,
            f,
            size,
            'Mark the highest and the lowest point of the line (keys "max" and "min") and give both values '
            "as an object with the same keys.",
            "mapping",
            ans,
            "point_map",
            {"max": hi_["pt"], "min": lo_["pt"]},
            wrong=[{"max": ans["min"], "min": ans["max"]}, dict(ans, max=ans["max"] - 5)],
            variants=[{"MAX": ans["max"], "Min": ans["min"]}],
            facts=[f"{p['label']} has {p['value']} orders." for p in pts],
            distractors=[p["pt"] for p in pts if p is not hi_ and p is not lo_],
        )
    )

    # line_04: local peaks, point_set (no image_size)
    size = (512, 512)
    rng = rng_for("line_04")
    while True:
        values = rng.sample(range(5, 60), 9)
        peaks = [i for i in range(1, 8) if values[i] > values[i - 1] and values[i] > values[i + 1]]
        if 2 <= len(peaks) <= 3:
            break
    img, pts = draw_line_chart(size, "Sensor reading", list(range(1, 10)), values, 10, colour="red")
    f = bank.image("images/line_04.png", img)
    bank.add(
        make_instance(
            "chart_value-013",
            T,
            f,
            size,
            "Mark the local peaks of the line (points higher than both neighbours). How many are there?",
            "integer",
            len(peaks),
            "point_set",
            [pts[i]["pt"] for i in peaks],
            wrong=wrong_ints(len(peaks)),
            facts=[f"Reading {p['label']} is {p['value']}." for p in pts],
            keep_size=False,
            distractors=[pts[i]["pt"] for i in range(9) if i not in peaks],
        )
    )

    # line_05: segment 2020-2021, boolean
    size = (800, 600)
    rng = rng_for("line_05")
    values = rng.sample(range(20, 100), 6)
    years = list(range(2018, 2024))
    img, pts = draw_line_chart(size, "Field trials completed", years, values, 20, colour="orange")
    f = bank.image("images/line_05.png", img)
    bank.add(
        make_instance(
            "chart_value-014",
            T,
            f,
            size,
            "Give the line segment between the 2020 and 2021 points. Is the 2021 value higher than the 2020 value?",
            "boolean",
            values[3] > values[2],
            "segment",
            [pts[2]["pt"], pts[3]["pt"]],
            wrong=[values[3] <= values[2]],
            facts=[f"{p['label']}: {p['value']} trials." for p in pts],
            distractors=[[pts[3]["pt"], pts[4]["pt"]]],
        )
    )

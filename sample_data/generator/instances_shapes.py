"""The ``count_shapes`` instances: shapes by colour and kind (``images/shapes_*``)."""

from __future__ import annotations

from .drawing import draw_shapes_image, shape_plan
from .ground_truth import Bank, make_instance, wrong_ints


def shape_facts(objs, k=6):
    out = []
    for o in objs[:k]:
        cx, cy = o["centre"]
        out.append(f"There is a {o['colour']} {o['kind']} centred near x={cx}, y={cy}.")
        out.append(f"The {o['colour']} {o['kind']} spans x from {o['box'][0]} to {o['box'][2]}.")
    return out


def build_shapes(bank: Bank):
    T = "count_shapes"
    # shapes_01: count red, bbox_set
    size = (640, 480)
    plan = shape_plan("shapes_01", 7, [("*", "red")] * 3, colours=("blue", "green", "yellow"))
    img, objs = draw_shapes_image("shapes_01", size, plan)
    f = bank.image("images/shapes_01.png", img)
    red = [o for o in objs if o["colour"] == "red"]
    bank.add(
        make_instance(
            "count_shapes-001",
            T,
            f,
            size,
            "How many red shapes are in the image? Give the count and the bounding box of every red shape.",
            "integer",
            len(red),
            "bbox_set",
            [o["box"] for o in red],
            wrong=wrong_ints(len(red)),
            variants=[float(len(red))],
            facts=shape_facts(objs),
            distractors=[o["box"] for o in objs if o["colour"] != "red"],
        )
    )

    # shapes_02: count per kind, bbox_set_map
    size = (512, 512)
    plan = shape_plan(
        "shapes_02", 7, [("circle", "*"), ("rectangle", "*"), ("triangle", "*"), ("triangle", "*")]
    )
    img, objs = draw_shapes_image("shapes_02", size, plan)
    f = bank.image("images/shapes_02.png", img)
    kinds = ("circle", "rectangle", "triangle")
    counts = {k: sum(o["kind"] == k for o in objs) for k in kinds}
    wrong = [
        dict(counts, circle=counts["circle"] + 1),
        dict(counts, triangle=counts["triangle"] - 1),
        {k: counts[k] for k in kinds[:2]},
    ]
    bank.add(
        make_instance(
            "count_shapes-002",
            T,
            f,
            size,
            "Count the shapes of each kind (circle, rectangle, triangle) and box every shape, grouped by kind "
            '(keys "circle", "rectangle", "triangle").',
            "mapping",
            counts,
            "bbox_set_map",
            {k: [o["box"] for o in objs if o["kind"] == k] for k in kinds},
            wrong=wrong,
            variants=[{k.upper(): v for k, v in counts.items()}],
            facts=shape_facts(objs),
            distractors=[[8, 8, 40, 40]],
        )
    )

    # shapes_03: blue centres, point_set ; 03b: largest shape centre, point
    size = (800, 600)
    plan = shape_plan("shapes_03", 8, [("*", "blue")] * 3, colours=("red", "green", "yellow", "purple"))
    img, objs = draw_shapes_image("shapes_03", size, plan)
    f = bank.image("images/shapes_03.png", img)
    blue = [o for o in objs if o["colour"] == "blue"]
    bank.add(
        make_instance(
            "count_shapes-003",
            T,
            f,
            size,
            "Mark the centre of every blue shape and say how many blue shapes there are.",
            "integer",
            len(blue),
            "point_set",
            [o["centre"] for o in blue],
            wrong=wrong_ints(len(blue)),
            facts=shape_facts(objs),
            distractors=[o["centre"] for o in objs if o["colour"] != "blue"],
        )
    )
    big = max(objs, key=lambda o: o["area"])
    bank.add(
        make_instance(
            "count_shapes-004",
            T,
            f,
            size,
            "Point at the centre of the largest shape. What colour is it?",
            "string",
            big["colour"],
            "point",
            big["centre"],
            wrong=[c for c in ("red", "blue", "green", "yellow", "purple") if c != big["colour"]][:3],
            variants=[big["colour"].title(), big["colour"].upper() + " "],
            facts=shape_facts(objs),
        )
    )

    # shapes_04: kind of the largest shape, bbox
    size = (320, 240)
    plan = shape_plan("shapes_04", 4, [("triangle", "*"), ("circle", "*"), ("rectangle", "*")])
    img, objs = draw_shapes_image("shapes_04", size, plan, noise=1.5)
    f = bank.image("images/shapes_04.png", img)
    big = max(objs, key=lambda o: o["area"])
    bank.add(
        make_instance(
            "count_shapes-005",
            T,
            f,
            size,
            "What kind of shape is the largest one (circle, rectangle or triangle)? Give its bounding box.",
            "string",
            big["kind"],
            "bbox",
            big["box"],
            wrong=[k for k in kinds if k != big["kind"]] + ["square"],
            variants=[big["kind"].title(), f" {big['kind']}"],
            facts=shape_facts(objs),
        )
    )

    # shapes_05: centres by colour, point_set_map
    size = (1024, 768)
    plan = shape_plan(
        "shapes_05",
        9,
        [("*", "red")] * 2 + [("*", "blue")] * 2 + [("*", "green")] * 2,
        colours=("red", "blue", "green"),
    )
    img, objs = draw_shapes_image("shapes_05", size, plan)
    f = bank.image("images/shapes_05.png", img)
    cols = ("red", "blue", "green")
    counts = {c: sum(o["colour"] == c for o in objs) for c in cols}
    bank.add(
        make_instance(
            "count_shapes-006",
            T,
            f,
            size,
            'Group the shape centres by colour (keys "red", "blue", "green") and give the number of shapes '
            "of each colour.",
            "mapping",
            counts,
            "point_set_map",
            {c: [o["centre"] for o in objs if o["colour"] == c] for c in cols},
            wrong=[dict(counts, red=counts["red"] + 1), dict(counts, green=counts["green"] - 1)],
            facts=shape_facts(objs),
            distractors=[[30, 30]],
        )
    )

    # shapes_06: largest/smallest, bbox_map, boolean
    size = (640, 480)
    plan = shape_plan("shapes_06", 6, [("circle", "*"), ("rectangle", "*")])
    img, objs = draw_shapes_image("shapes_06", size, plan)
    f = bank.image("images/shapes_06.png", img)
    big, small = max(objs, key=lambda o: o["area"]), min(objs, key=lambda o: o["area"])
    bank.add(
        make_instance(
            "count_shapes-007",
            T,
            f,
            size,
            'Box the largest and the smallest shape (keys "largest" and "smallest"). Is the largest shape a circle?',
            "boolean",
            big["kind"] == "circle",
            "bbox_map",
            {"largest": big["box"], "smallest": small["box"]},
            wrong=[big["kind"] != "circle"],
            facts=shape_facts(objs),
            distractors=[o["box"] for o in objs if o is not big and o is not small],
        )
    )

    # shapes_07: leftmost/rightmost centres, point_map, option letter (no image_size)
    size = (400, 300)
    plan = shape_plan("shapes_07", 5)
    img, objs = draw_shapes_image("shapes_07", size, plan)
    f = bank.image("images/shapes_07.png", img)
    by_x = sorted(objs, key=lambda o: o["centre"][0])
    assert by_x[0]["centre"][0] < by_x[1]["centre"][0] and by_x[-2]["centre"][0] < by_x[-1]["centre"][0]
    letters = {"red": "A", "blue": "B", "green": "C", "yellow": "D"}
    bank.add(
        make_instance(
            "count_shapes-008",
            T,
            f,
            size,
            'Give the centres of the leftmost and the rightmost shape (keys "leftmost", "rightmost"). '
            "What colour is the leftmost shape? A) red B) blue C) green D) yellow",
            "option_letter",
            letters[by_x[0]["colour"]],
            "point_map",
            {"leftmost": by_x[0]["centre"], "rightmost": by_x[-1]["centre"]},
            wrong=[v for v in "ABCD" if v != letters[by_x[0]["colour"]]],
            variants=[letters[by_x[0]["colour"]].lower()],
            facts=shape_facts(objs),
            keep_size=False,
            distractors=[o["centre"] for o in by_x[1:-1]],
        )
    )

    # shapes_08: labelled shapes, red labels by size, bbox_sequence + index_list
    size = (800, 600)
    plan = shape_plan("shapes_08", 7, [("*", "red")] * 3, colours=("blue", "green", "yellow"))
    img, objs = draw_shapes_image("shapes_08", size, plan, labels=True)
    f = bank.image("images/shapes_08.png", img)
    red = sorted((o for o in objs if o["colour"] == "red"), key=lambda o: -o["area"])
    order = [o["label"] for o in red]
    bank.add(
        make_instance(
            "count_shapes-009",
            T,
            f,
            size,
            "The shapes carry numbers. List the numbers on the red shapes from the largest red shape to the smallest, "
            "and box those shapes in the same order.",
            "index_list",
            order,
            "bbox_sequence",
            [o["box"] for o in red],
            wrong=[order[::-1], sorted(order), order[1:]],
            facts=shape_facts(objs),
            distractors=[o["box"] for o in objs if o["colour"] != "red"],
        )
    )

    # shapes_09: circles, answer mode
    size = (1024, 768)
    plan = shape_plan("shapes_09", 8, [("circle", "*")] * 3)
    img, objs = draw_shapes_image("shapes_09", size, plan)
    f = bank.image("images/shapes_09.png", img)
    circ = [o for o in objs if o["kind"] == "circle"]
    bank.add(
        make_instance(
            "count_shapes-010",
            T,
            f,
            size,
            "How many circles are in the image?",
            "integer",
            len(circ),
            "bbox_set",
            [o["box"] for o in circ],
            wrong=wrong_ints(len(circ)),
            mode="answer",
            variants=[str(len(circ))],
            facts=shape_facts(objs),
        )
    )

    # shapes_10: labelled, point_sequence in label order, colour of the last
    size = (512, 512)
    plan = shape_plan("shapes_10", 5, colours=("red", "blue", "green", "orange"))
    img, objs = draw_shapes_image("shapes_10", size, plan, labels=True)
    f = bank.image("images/shapes_10.png", img)
    last = objs[-1]
    bank.add(
        make_instance(
            "count_shapes-011",
            T,
            f,
            size,
            "Visit the shapes in the order of their numbers and give their centres in that order. "
            "What colour is the last shape you visit?",
            "string",
            last["colour"],
            "point_sequence",
            [o["centre"] for o in objs],
            wrong=[c for c in ("red", "blue", "green", "orange") if c != last["colour"]],
            variants=[last["colour"].title()],
            facts=shape_facts(objs),
        )
    )

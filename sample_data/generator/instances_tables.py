"""The ``locate_cell`` instances: tables (``images/table_*``)."""

from __future__ import annotations

from .common import rng_for
from .drawing import draw_table
from .ground_truth import Bank, make_instance, wrong_ints


def build_tables(bank: Bank):
    T = "locate_cell"
    # table_01: find 'delta', bbox, string cell id
    size = (640, 480)
    rng = rng_for("table_01")
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "omega",
        "sigma",
        "kappa",
        "theta",
        "lambda",
        "zeta",
        "iota",
        "rho",
        "tau",
        "phi",
        "chi",
        "psi",
    ]
    rng.shuffle(words)
    texts = [words[r * 4 : (r + 1) * 4] for r in range(4)]
    img, cells = draw_table(size, texts)
    f = bank.image("images/table_01.png", img)
    ((r, c),) = [k for k, v in cells.items() if v["text"] == "delta"]
    cid = f"{'ABCD'[c]}{r + 1}"
    bank.add(
        make_instance(
            "locate_cell-001",
            T,
            f,
            size,
            "Which cell contains the word 'delta'? Answer with its column letter and row number (for example B3) "
            "and box the cell.",
            "string",
            cid,
            "bbox",
            cells[(r, c)]["box"],
            wrong=[f"{'ABCD'[(c + 1) % 4]}{r + 1}", f"{'ABCD'[c]}{(r + 1) % 4 + 1}", f"{r + 1}{'ABCD'[c]}"],
            variants=[cid.lower()],
            facts=[f"Cell {'ABCD'[cc]}{rr + 1} reads '{v['text']}'." for (rr, cc), v in cells.items()][:8],
        )
    )

    # table_02: 3x3 matrix, bbox of the grid
    size = (800, 600)
    rng = rng_for("table_02")
    mat = [[rng.randint(-9, 20) for _ in range(3)] for _ in range(3)]
    img, cells = draw_table(size, mat)
    f = bank.image("images/table_02.png", img)
    grid = [
        cells[(0, 0)]["box"][0],
        cells[(0, 0)]["box"][1],
        cells[(2, 2)]["box"][2],
        cells[(2, 2)]["box"][3],
    ]
    wrong1 = [row[:] for row in mat]
    wrong1[1][2] += 1
    bank.add(
        make_instance(
            "locate_cell-002",
            T,
            f,
            size,
            "Read the 3x3 grid of numbers as a matrix (rows from top to bottom) and box the whole grid.",
            "matrix",
            mat,
            "bbox",
            grid,
            wrong=[wrong1, [list(col) for col in zip(*mat, strict=True)], mat[:2]],
            variants=[[[float(v) for v in row] for row in mat]],
            facts=[f"Row {r + 1} reads {', '.join(str(v) for v in row)}." for r, row in enumerate(mat)],
        )
    )

    # table_03: coloured cells, bbox_set_map, mapping counts
    size = (1024, 768)
    rng = rng_for("table_03")
    mat = [[rng.randint(0, 99) for _ in range(5)] for _ in range(5)]
    spots = rng.sample([(r, c) for r in range(5) for c in range(5)], 7)
    fills = {k: ("red" if i < 3 else "blue") for i, k in enumerate(spots)}
    img, cells = draw_table(size, mat, fills=fills)
    f = bank.image("images/table_03.png", img)
    groups = {col: [cells[k]["box"] for k in sorted(fills) if fills[k] == col] for col in ("red", "blue")}
    bank.add(
        make_instance(
            "locate_cell-003",
            T,
            f,
            size,
            'Box the highlighted cells grouped by colour (keys "red" and "blue") and count the cells of each colour.',
            "mapping",
            {"red": 3, "blue": 4},
            "bbox_set_map",
            groups,
            wrong=[{"red": 4, "blue": 3}, {"red": 3, "blue": 5}],
            variants=[{"Red": 3, "BLUE": 4}],
            facts=[
                f"The cell in row {r + 1}, column {'ABCDE'[c]} is shaded {fills[(r, c)]}."
                for r, c in sorted(fills)
            ],
            distractors=[cells[(r, c)]["box"] for r in range(5) for c in range(5) if (r, c) not in fills][:4],
        )
    )

    # table_04: negative numbers, bbox_set
    size = (512, 512)
    rng = rng_for("table_04")
    while True:
        mat = [[rng.randint(-30, 60) for _ in range(4)] for _ in range(4)]
        neg = [(r, c) for r in range(4) for c in range(4) if mat[r][c] < 0]
        if 3 <= len(neg) <= 5:
            break
    img, cells = draw_table(size, mat)
    f = bank.image("images/table_04.png", img)
    bank.add(
        make_instance(
            "locate_cell-004",
            T,
            f,
            size,
            "Box every cell that holds a negative number. How many are there?",
            "integer",
            len(neg),
            "bbox_set",
            [cells[k]["box"] for k in neg],
            wrong=wrong_ints(len(neg)),
            facts=[f"Cell {'ABCD'[c]}{r + 1} holds {mat[r][c]}." for r, c in neg],
            distractors=[cells[(r, c)]["box"] for r in range(4) for c in range(4) if mat[r][c] >= 0][:4],
        )
    )

    # table_05: highlighted centres by colour, point_set_map (no image_size)
    size = (640, 480)
    rng = rng_for("table_05")
    texts = [[rng.choice(["ok", "late", "n/a", "done", "todo"]) for _ in range(5)] for _ in range(4)]
    spots = rng.sample([(r, c) for r in range(4) for c in range(5)], 5)
    fills = {k: ("green" if i < 3 else "yellow") for i, k in enumerate(spots)}
    img, cells = draw_table(size, texts, fills=fills)
    f = bank.image("images/table_05.png", img)

    def centre(b):
        return [(b[0] + b[2]) // 2, (b[1] + b[3]) // 2]

    bank.add(
        make_instance(
            "locate_cell-005",
            T,
            f,
            size,
            'Mark the centre of each highlighted cell, grouped by colour (keys "green" and "yellow"). '
            "How many highlighted cells are there in total?",
            "integer",
            5,
            "point_set_map",
            {
                col: [centre(cells[k]["box"]) for k in sorted(fills) if fills[k] == col]
                for col in ("green", "yellow")
            },
            wrong=[4, 6, 3],
            keep_size=False,
            facts=[
                f"Row {r + 1}, column {'ABCDE'[c]} is highlighted {fills[(r, c)]}." for r, c in sorted(fills)
            ],
            distractors=[centre(cells[(0, 0)]["box"])]
            if (0, 0) not in fills
            else [centre(cells[(3, 4)]["box"])],
        )
    )

    # table_06: row with the largest sum (option letter, bbox) ; 06b: rows A and B as matrix (bbox_sequence)
    size = (800, 600)
    rng = rng_for("table_06")
    while True:
        mat = [[rng.randint(1, 40) for _ in range(4)] for _ in range(4)]
        sums = [sum(r) for r in mat]
        if sums.count(max(sums)) == 1:
            break
    img, cells = draw_table(size, mat, row_labels=["A", "B", "C", "D"], col_labels=["Q1", "Q2", "Q3", "Q4"])
    f = bank.image("images/table_06.png", img)

    def row_box(r):
        return [
            cells[(r, 0)]["box"][0],
            cells[(r, 0)]["box"][1],
            cells[(r, 3)]["box"][2],
            cells[(r, 3)]["box"][3],
        ]

    best = sums.index(max(sums))
    facts = [f"Row {'ABCD'[r]} sums to {sums[r]}." for r in range(4)]
    bank.add(
        make_instance(
            "locate_cell-006",
            T,
            f,
            size,
            "Which row has the largest sum? Answer with the row letter and box the whole row.",
            "option_letter",
            "ABCD"[best],
            "bbox",
            row_box(best),
            wrong=[v for v in "ABCD" if v != "ABCD"[best]],
            facts=facts,
            variants=["ABCD"[best].lower()],
        )
    )
    bank.add(
        make_instance(
            "locate_cell-007",
            T,
            f,
            size,
            "Read rows A and B as a 2x4 matrix and box row A and then row B.",
            "matrix",
            mat[:2],
            "bbox_sequence",
            [row_box(0), row_box(1)],
            wrong=[mat[1::-1], [mat[0], mat[2]]],
            facts=facts,
            distractors=[row_box(2)],
        )
    )

"""The ``trace_path`` instances: arrow diagrams (``images/diagram_*``)."""

from __future__ import annotations

from .common import rng_for
from .drawing import draw_diagram
from .ground_truth import Bank, make_instance


def build_diagrams(bank: Bank):
    T = "trace_path"
    # diagram_01: numbered nodes, follow arrows from 0 (index_list + point_sequence)
    size = (640, 480)
    rng = rng_for("diagram_01")
    rest = rng.sample(range(1, 6), 5)
    path = [0] + rest[:3]
    others = rest[3:]
    labels = [str(i) for i in range(6)]
    edges = [(str(a), str(b)) for a, b in zip(path, path[1:], strict=False)]
    edges += [
        (str(others[0]), str(path[2])),
        (str(others[1]), str(others[0])),
        (str(others[1]), str(path[1])),
    ]
    img, nodes, segs = draw_diagram(size, labels, edges, "diagram_01")
    f = bank.image("images/diagram_01.png", img)
    bank.add(
        make_instance(
            "trace_path-001",
            T,
            f,
            size,
            "Start at node 0 and follow the arrows until you cannot continue. List the nodes you visit (including 0) "
            "and mark their centres in the same order.",
            "index_list",
            path,
            "point_sequence",
            [nodes[str(i)]["centre"] for i in path],
            wrong=[path[:-1], path[::-1], [0, *others, path[-1]]],
            facts=[f"Node {a} has an arrow to node {b}." for a, b in edges],
            distractors=[nodes[str(i)]["centre"] for i in others],
        )
    )

    # diagram_02: route A->F, segment_set
    size = (800, 600)
    rng = rng_for("diagram_02")
    mid = rng.sample(["B", "C", "D", "E"], 4)
    route = ["A", mid[0], mid[1], "F"]
    edges = list(zip(route, route[1:], strict=False))
    edges += [(mid[2], mid[1]), (mid[3], "F"), (mid[2], mid[3])]
    img, nodes, segs = draw_diagram(size, list("ABCDEF"), edges, "diagram_02")
    f = bank.image("images/diagram_02.png", img)
    bank.add(
        make_instance(
            "trace_path-002",
            T,
            f,
            size,
            "Follow the arrows from A to F and give each edge on the route as a segment. How many edges does the route use?",
            "integer",
            3,
            "segment_set",
            [segs[e] for e in edges[:3]],
            wrong=[2, 4, 5],
            facts=[f"An arrow runs from {a} to {b}." for a, b in edges],
            distractors=[segs[e] for e in edges[3:]],
        )
    )

    # diagram_03: edge between B and D (segment, boolean) ; 03b: centre of E (point), in-degree
    size = (1024, 768)
    rng = rng_for("diagram_03")
    bd = ("B", "D") if rng.random() < 0.5 else ("D", "B")
    edges = [bd, ("A", "B"), ("C", "E"), ("F", "E"), ("D", "F"), ("A", "C")]
    img, nodes, segs = draw_diagram(size, list("ABCDEF"), edges, "diagram_03")
    f = bank.image("images/diagram_03.png", img)
    facts = [f"There is an arrow from {a} to {b}." for a, b in edges] + [
        f"Node {k} sits near x={v['centre'][0]}, y={v['centre'][1]}." for k, v in nodes.items()
    ]
    bank.add(
        make_instance(
            "trace_path-003",
            T,
            f,
            size,
            "Give the edge between nodes B and D as a segment. Does its arrow point towards D?",
            "boolean",
            bd == ("B", "D"),
            "segment",
            segs[bd],
            wrong=[bd != ("B", "D")],
            facts=facts,
            distractors=[segs[("A", "B")]],
        )
    )
    bank.add(
        make_instance(
            "trace_path-004",
            T,
            f,
            size,
            "Mark the centre of node E. How many arrows point into E?",
            "integer",
            2,
            "point",
            nodes["E"]["centre"],
            wrong=[1, 3],
            facts=facts,
            variants=["2"],
        )
    )

    # diagram_04: chain, start/end point_map (no image_size)
    size = (512, 512)
    rng = rng_for("diagram_04")
    chain = rng.sample(list("ABCDE"), 5)
    edges = list(zip(chain, chain[1:], strict=False))
    img, nodes, segs = draw_diagram(size, list("ABCDE"), edges, "diagram_04")
    f = bank.image("images/diagram_04.png", img)
    bank.add(
        make_instance(
            "trace_path-005",
            T,
            f,
            size,
            'Mark the start node (no incoming arrow) and the end node (no outgoing arrow) with keys "start" and "end". '
            "How many arrows lie on the path from start to end?",
            "integer",
            4,
            "point_map",
            {"start": nodes[chain[0]]["centre"], "end": nodes[chain[-1]]["centre"]},
            wrong=[3, 5],
            keep_size=False,
            facts=[f"{a} points to {b}." for a, b in edges],
            distractors=[nodes[chain[2]]["centre"]],
        )
    )

    # diagram_05: node boxes (bbox_map), most outgoing ; 05b: arrows leaving A (segment_set)
    size = (800, 600)
    edges = [("A", "B"), ("A", "D"), ("C", "A"), ("C", "E"), ("C", "B"), ("D", "E"), ("E", "B")]
    img, nodes, segs = draw_diagram(size, list("ABCDE"), edges, "diagram_05")
    f = bank.image("images/diagram_05.png", img)
    facts = [f"Node {a} sends an arrow to {b}." for a, b in edges]
    bank.add(
        make_instance(
            "trace_path-006",
            T,
            f,
            size,
            'Box the nodes A, B and C (keys "A", "B", "C"). Which node has the most outgoing arrows?',
            "string",
            "C",
            "bbox_map",
            {k: nodes[k]["box"] for k in "ABC"},
            wrong=["A", "E", "B"],
            variants=["c", " C"],
            facts=facts,
            distractors=[nodes["D"]["box"]],
        )
    )
    bank.add(
        make_instance(
            "trace_path-007",
            T,
            f,
            size,
            "Give every arrow that leaves node A as a segment. How many are there?",
            "integer",
            2,
            "segment_set",
            [segs[("A", "B")], segs[("A", "D")]],
            wrong=[1, 3],
            facts=facts,
            distractors=[segs[("C", "A")]],
        )
    )

    # diagram_06: arrows leaving A, answer mode
    size = (640, 480)
    edges = [("A", "B"), ("A", "C"), ("A", "E"), ("D", "A"), ("B", "F"), ("E", "F")]
    img, nodes, segs = draw_diagram(
        size, list("ABCDEF"), edges, "diagram_06", highlight={e for e in edges if e[0] == "A"}
    )
    f = bank.image("images/diagram_06.png", img)
    bank.add(
        make_instance(
            "trace_path-008",
            T,
            f,
            size,
            "How many arrows leave node A?",
            "integer",
            3,
            "point_set",
            [nodes[k]["centre"] for k in "BCE"],
            wrong=[2, 4],
            mode="answer",
            facts=[f"A red arrow goes from {a} to {b}." for a, b in edges if a == "A"],
        )
    )

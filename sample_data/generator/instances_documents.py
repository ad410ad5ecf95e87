"""The ``read_document`` instances: invoice-like documents with labelled fields (``images/doc_*``)."""

from __future__ import annotations

from .common import rng_for
from .drawing import draw_document
from .ground_truth import Bank, make_instance


def build_documents(bank: Bank):
    T = "read_document"
    # doc_01: field boxes (bbox_map) + values (mapping) ; 01b: reading order (bbox_sequence)
    size = (800, 600)
    fields = [
        ("invoice_no", "Invoice No.", "INV-2041"),
        ("date", "Date", "2026-03-14"),
        ("customer", "Customer", "Harbor Labs"),
        ("total", "Total", "$1,284.50"),
    ]
    img, out, _ = draw_document(size, fields)
    f = bank.image("images/doc_01.png", img)
    facts = [f"The '{v['label']}' box reads {v['value']}." for v in out.values()]
    keys = ("invoice_no", "date", "total")
    ans = {k: out[k]["value"] for k in keys}
    bank.add(
        make_instance(
            "read_document-001",
            T,
            f,
            size,
            'Box the fields Invoice No., Date and Total (keys "invoice_no", "date", "total") and read their values '
            "into an object with the same keys.",
            "mapping",
            ans,
            "bbox_map",
            {k: out[k]["box"] for k in keys},
            wrong=[dict(ans, total="$1,248.50"), dict(ans, date="2026-04-14")],
            variants=[{k: v.upper() for k, v in ans.items()}],
            facts=facts,
            distractors=[out["customer"]["box"]],
        )
    )
    bank.add(
        make_instance(
            "read_document-002",
            T,
            f,
            size,
            "Box every field box in reading order (left to right, then top to bottom). How many field boxes are there?",
            "integer",
            4,
            "bbox_sequence",
            [out[k]["box"] for k, _, _ in fields],
            wrong=[3, 5],
            facts=facts,
        )
    )

    # doc_02: which tagged box holds the total (option letter, bbox)
    size = (1024, 768)
    rng = rng_for("doc_02")
    fields = [
        ("subtotal", "Subtotal", "$1,180.00"),
        ("tax", "Tax", "$104.50"),
        ("total", "Total", "$1,284.50"),
        ("paid", "Paid", "$0.00"),
    ]
    rng.shuffle(fields)
    tags = ["A", "B", "C", "D"]
    img, out, _ = draw_document(size, fields, tags=tags)
    f = bank.image("images/doc_02.png", img)
    letter = tags[[k for k, _, _ in fields].index("total")]
    bank.add(
        make_instance(
            "read_document-003",
            T,
            f,
            size,
            "The boxes are tagged A to D in their top-right corner. Which box holds the invoice total? "
            "Give the letter and box it.",
            "option_letter",
            letter,
            "bbox",
            out["total"]["box"],
            wrong=[t for t in tags if t != letter],
            facts=[
                f"Box {t} is labelled '{lab}' and reads {val}."
                for t, (_, lab, val) in zip(tags, fields, strict=True)
            ],
        )
    )

    # doc_03: due date (string, bbox), noisy scan
    size = (640, 480)
    fields = [
        ("issued", "Issued", "2026-02-01"),
        ("due", "Due date", "2026-03-03"),
        ("reference", "Reference", "PO-7781"),
        ("terms", "Terms", "Net 30"),
    ]
    img, out, _ = draw_document(size, fields, noise=1.2, seed=3, title="STATEMENT")
    f = bank.image("images/doc_03.png", img)
    bank.add(
        make_instance(
            "read_document-004",
            T,
            f,
            size,
            "What is the due date printed on the document? Box it.",
            "string",
            "2026-03-03",
            "bbox",
            out["due"]["box"],
            wrong=["2026-02-01", "2026-03-30", "03/03/2026"],
            facts=[f"The {v['label']} field shows {v['value']}." for v in out.values()],
        )
    )

    # doc_04: line items (bbox_set_map), sum of amounts (number)
    size = (1280, 720)
    items = [
        ("Lens cleaning kit", 12.5),
        ("Calibration service", 240.0),
        ("Shipping", 7.25),
        ("Mount adapter", 64.0),
    ]
    img, out, cells = draw_document(
        size, [("invoice_no", "Invoice No.", "INV-3317"), ("date", "Date", "2026-05-02")], items=items
    )
    f = bank.image("images/doc_04.png", img)
    total = sum(a for _, a in items)
    bank.add(
        make_instance(
            "read_document-005",
            T,
            f,
            size,
            'Box the line-item descriptions and amounts (keys "description" and "amount"). '
            "What is the sum of the amounts?",
            "number",
            total,
            "bbox_set_map",
            {"description": [c["desc_box"] for c in cells], "amount": [c["amount_box"] for c in cells]},
            wrong=[total - 7.25, 323.5, 316.0],
            variants=[f"{total:.2f}"],
            facts=[f"The line '{c['desc']}' costs {c['amount']:.2f}." for c in cells],
            distractors=[out["date"]["box"]],
        )
    )

"""Three tiny LoCoMo-format conversations: enough for leave-one-conversation-out folds."""

from __future__ import annotations

from typing import Any

_CONVERSATIONS: tuple[tuple[str, str, str, list[list[str]], list[tuple[str, str, int]]], ...] = (
    (
        "folds-a",
        "Ana",
        "Ben",
        [
            [
                "I adopted a grey cat named Pixel last week.",
                "Lovely! How is Pixel settling in?",
                "She sleeps on the piano all day.",
                "Cats always find the warmest spot.",
            ],
            [
                "I ran the Lisbon marathon on Sunday.",
                "Congratulations, what was your time?",
                "Three hours and forty minutes.",
                "That is a great first marathon.",
            ],
        ],
        [
            ("What is the name of Ana's cat?", "D1:1", 4),
            ("Where does Pixel sleep?", "D1:3", 1),
            ("When did Ana run the marathon?", "D2:1", 2),
        ],
    ),
    (
        "folds-b",
        "Chloe",
        "Dev",
        [
            [
                "My sister is getting married in Porto in June.",
                "Are you giving a speech at the wedding?",
                "Yes, and I am terrified of public speaking.",
                "Practise it in front of a mirror first.",
            ],
            [
                "I started pottery classes on Tuesday evenings.",
                "What did you make first?",
                "A lopsided blue bowl for my desk.",
                "Every potter starts with a lopsided bowl.",
            ],
        ],
        [
            ("Where is Chloe's sister getting married?", "D1:1", 4),
            ("What did Chloe make in pottery class?", "D2:3", 1),
            ("What is Chloe afraid of?", "D1:3", 3),
        ],
    ),
    (
        "folds-c",
        "Emil",
        "Fay",
        [
            [
                "We planted tomatoes and basil in the allotment.",
                "Did the tomatoes survive the frost?",
                "Only the ones under the fleece did.",
                "Fleece is worth every penny in spring.",
            ],
            [
                "I bought a second-hand cello from a neighbour.",
                "Have you played a string instrument before?",
                "Only the violin, twenty years ago.",
                "The cello will feel familiar then.",
            ],
        ],
        [
            ("Which tomatoes survived the frost?", "D1:3", 1),
            ("What instrument did Emil buy?", "D2:1", 4),
            ("Which instrument did Emil play before?", "D2:3", 4),
        ],
    ),
)


def conversations() -> list[dict[str, Any]]:
    """The samples, each with two dated sessions and three questions with gold evidence."""
    out: list[dict[str, Any]] = []
    for sample_id, a, b, sessions, questions in _CONVERSATIONS:
        conv: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        for n, texts in enumerate(sessions, start=1):
            conv[f"session_{n}_date_time"] = f"1:00 pm on {n + 3} May, 2023"
            conv[f"session_{n}"] = [
                {"speaker": (a, b)[i % 2], "dia_id": f"D{n}:{i + 1}", "text": t}
                for i, t in enumerate(texts)
            ]
        qa = [{"question": q, "evidence": [e], "category": c} for q, e, c in questions]
        out.append({"sample_id": sample_id, "conversation": conv, "qa": qa})
    return out

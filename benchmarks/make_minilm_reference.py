"""Write tests/dense/fixtures/minilm_reference.json: sentence-transformers' own vectors.

Run once, from the repository root, in a throwaway venv that has torch and
sentence-transformers (membench itself no longer installs them):
    python benchmarks/make_minilm_reference.py

The test suite compares membench's numpy encoder with these vectors, so parity with
the reference implementation stays checked without torch in the project's venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

FIXTURE = ROOT / "tests/dense/fixtures/minilm_reference.json"
TEXTS = [
    "We moved production to eu-central-1.",
    "Where does prod live these days?",
    "Every service runs on Node 24 now",
    "def parse_header(line):\n    key, _, value = line.partition(\":\")\n"
    "    return key.strip().lower(), value.strip()\n",
    "",
    "   \n\t  ",
    "A",
    "Café déjà vu: naïve façade, Ångström, straße, ΑΒΓ αβγ, Кириллица",
    "Ship it 🚀🔥 — thanks!! 👍🏽 (╯°□°)╯︵ ┻━┻",
    "数据库迁移已经完成，生产环境在法兰克福。日本語のテキストも。한국어 문장.",
    "getUserAccountSettingsByOrganizationIdentifierAndRegionCode_v2 = "
    "AbstractSingletonProxyFactoryBean()",
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days' ORDER BY id;",
    "{\"key\": [1, 2.5e-3, null, true], \"nested\": {\"a\": \"b\"}}",
    "https://example.com/path?query=1&b=%20x#frag user@example.org 192.168.0.1:8080",
    "Numbers: 3.14159 2.71828 1e-12 -42 0x1F 0b1010 1,000,000",
    "The staging cluster's flaky tests block every deploy. " * 40,
    "word " * 300,
    "x" * 2000,
    "import numpy as np\n\nfor i in range(10):\n    total += np.sum(i * i)\nprint(total)\n" * 10,
    "Please forget my phone number, it's +49 151 2345 6789.",
    "[CLS] [SEP] [MASK] [PAD] [UNK] literal special tokens",
]


def main() -> None:
    import numpy as np
    import sentence_transformers
    import torch

    from membench.retrieval.embedding import DEFAULT_MODEL_ID, model_dir, weights_sha256

    model = sentence_transformers.SentenceTransformer(str(model_dir()), device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True, batch_size=1)
    document = {
        "made_by": "benchmarks/make_minilm_reference.py",
        "model": DEFAULT_MODEL_ID,
        "weights_sha256": weights_sha256(),
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "texts": TEXTS,
        # float32 values written with 9 significant digits round-trip exactly.
        "vectors": [[float(f"{value:.9g}") for value in row] for row in np.asarray(vectors)],
    }
    FIXTURE.write_text(json.dumps(document, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {len(TEXTS)} vectors to {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

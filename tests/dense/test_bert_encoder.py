"""The numpy BERT pieces that have no numpy or torch twin: erf/normal CDF and GELU."""

import math

import numpy as np

from membench.retrieval.bert_encoder import erf, normal_cdf


def test_erf_matches_math_erf_to_float64_rounding():
    points = np.concatenate([
        np.linspace(-10, 10, 40001), [0.0, -0.0, 1e-300, 5e-324, -1e-9, 0.5, 0.84375, 6, 30],
        np.random.default_rng(0).normal(scale=3, size=20000),
    ])
    expected = np.array([math.erf(x) for x in points])
    assert np.abs(erf(points) - expected).max() < 2e-15


def test_normal_cdf_matches_erfc_including_the_tails():
    points = np.linspace(-40, 40, 80001)
    expected = np.array([0.5 * math.erfc(-x / math.sqrt(2)) for x in points])
    assert np.abs(normal_cdf(points) - expected).max() < 4e-16
    assert normal_cdf(np.array([-40.0]))[0] < 1e-17 and normal_cdf(np.array([40.0]))[0] == 1.0


def test_gelu_is_exact_gelu():
    from membench.retrieval.bert_encoder import gelu_in_place

    x = np.linspace(-12, 12, 2401).reshape(7, -1)
    expected = np.array([[v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in row] for row in x])
    gelu_in_place(x)
    assert np.abs(x - expected).max() < 4e-15

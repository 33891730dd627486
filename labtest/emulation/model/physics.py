"""Link physics: optical margin -> pre-FEC BER -> RS(544,514) codewords, PRBS errors.

One chain feeds every error counter in the model, so FEC bins, pre-FEC BER
and PRBS checkers always agree with each other and with the Rx power a DOM
read shows. Everything here is a pure, vectorised function of numpy arrays;
the random draws take a ``numpy.random.Generator`` so a seed fixes them.

Numbers (see shared/design/reference/domain-methodology.md, sections 1 and 2):

* PAM4 with a thermal-noise-limited receiver: ``BER = 0.75 * Q(x)``, ``x``
  proportional to the linear Rx OMA, calibrated so that BER = 2.4e-4 (the KP4
  pre-FEC threshold) at sensitivity. Near sensitivity 1 dB is worth about one
  decade of BER.
* RS(544,514) "KP4": 10-bit symbols, 5440-bit codewords, corrects t = 15
  symbols; symbol errors per codeword ~ Binom(544, SER), SER = 1-(1-BER)^10.
* Line rate: 400GbE runs 425 Gb/s on the wire (256b/257b and 544/514
  overheads, x1.0625), i.e. 7.8125e7 codewords/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

# --- constants -------------------------------------------------------------

BER_AT_SENSITIVITY = 2.4e-4  # KP4 pre-FEC threshold (IEEE 802.3 cl.119; datasheets)
PAM4_BER_FACTOR = 0.75  # 3 decision thresholds / (4 levels * log2(4) bits), Gray coded
#: Q argument at sensitivity: 0.75 * Q(x0) = 2.4e-4  ->  x0 ~= 3.414
Q_AT_SENSITIVITY = float(special.ndtri(1.0 - BER_AT_SENSITIVITY / PAM4_BER_FACTOR))

KP4_SYMBOLS = 544  # symbols per codeword
KP4_T = 15  # correctable symbols per codeword
SYMBOL_BITS = 10
CODEWORD_BITS = KP4_SYMBOLS * SYMBOL_BITS  # 5440
FEC_BINS = KP4_T + 1  # histogram bins 0..15 (a codeword with >= 16 is uncorrectable)
LINE_RATE_FACTOR = 1.0625  # 257/256 * 544/514: MAC rate -> rate on the wire

#: above this pre-FEC BER a PCS or PRBS checker cannot hold lock (emulator choice)
LOCK_MAX_BER = 1e-2

_K = np.arange(FEC_BINS)
_LOG_BINOM = special.gammaln(KP4_SYMBOLS + 1) - special.gammaln(_K + 1) - special.gammaln(
    KP4_SYMBOLS - _K + 1
)


# --- optics -> BER ---------------------------------------------------------


def db_to_linear(db: np.ndarray | float) -> np.ndarray:
    return np.power(10.0, np.asarray(db, dtype=float) / 10.0)


def oma_dbm_from_avg(
    avg_dbm: np.ndarray | float, extinction_ratio_db: np.ndarray | float
) -> np.ndarray:
    """Outer OMA from average power: OMA = 2*Pavg*(ER-1)/(ER+1) (linear)."""
    er = db_to_linear(extinction_ratio_db)
    return np.asarray(avg_dbm, dtype=float) + 10.0 * np.log10(2.0 * (er - 1.0) / (er + 1.0))


def ber_from_margin_db(margin_db: np.ndarray | float) -> np.ndarray:
    """Pre-FEC BER for an Rx OMA ``margin_db`` above sensitivity (PAM4 Q-model)."""
    x = Q_AT_SENSITIVITY * db_to_linear(margin_db)
    return PAM4_BER_FACTOR * special.ndtr(-x)


def margin_db_from_ber(ber: np.ndarray | float) -> np.ndarray:
    """Inverse of ``ber_from_margin_db``: the OMA margin that gives ``ber``."""
    x = special.ndtri(1.0 - np.asarray(ber, dtype=float) / PAM4_BER_FACTOR)
    return 10.0 * np.log10(x / Q_AT_SENSITIVITY)


def symbol_error_ratio(ber: np.ndarray | float) -> np.ndarray:
    """Probability that a 10-bit symbol has at least one bit error (random errors)."""
    return -np.expm1(SYMBOL_BITS * np.log1p(-np.asarray(ber, dtype=float)))


# --- RS(544,514) codewords --------------------------------------------------


def codewords_per_s(line_rate_gbps: float | np.ndarray) -> np.ndarray:
    return np.asarray(line_rate_gbps, dtype=float) * 1e9 / CODEWORD_BITS


def codeword_probabilities(ser: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """P(k symbol errors) for k = 0..15 (shape ``ser.shape + (16,)``) and P(k >= 16).

    The uncorrectable tail is the exact binomial survival function (scipy's
    ``bdtrc``), not 1 - sum(bins), which would round to 0 below ~1e-16.
    """
    s = np.clip(np.asarray(ser, dtype=float), 1e-300, 1.0 - 1e-12)
    log_pmf = (
        _LOG_BINOM
        + _K * np.log(s)[..., None]
        + (KP4_SYMBOLS - _K) * np.log1p(-s)[..., None]
    )
    return np.exp(log_pmf), special.bdtrc(KP4_T, KP4_SYMBOLS, s)


def sample_codewords(
    rng: np.random.Generator,
    n_codewords: np.ndarray,
    ser: np.ndarray,
    probabilities: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw the FEC histogram for ``n_codewords`` codewords per port.

    Returns ``(bins, uncorrectable)``: bins has shape ``(P, 16)``. Sampling is
    one multinomial per port (not a loop over codewords), so an hour of 400G
    (2.8e11 codewords) costs the same as a millisecond. Uncorrectable
    codewords are a Poisson draw on the exact tail probability while it is
    tiny (Poisson == binomial there), binomial otherwise.
    """
    n = np.asarray(n_codewords, dtype=np.int64)
    # ``probabilities``: codeword_probabilities(ser) computed earlier (the same numbers)
    pmf, p_unc = codeword_probabilities(ser) if probabilities is None else probabilities
    tiny = p_unc < 1e-6
    unc = np.where(
        tiny,
        rng.poisson(np.where(tiny, n * p_unc, 0.0)),
        rng.binomial(n, np.where(tiny, 0.0, p_unc)),
    )
    unc = np.minimum(unc, n)
    probs = pmf / pmf.sum(axis=-1, keepdims=True)
    bins = rng.multinomial(n - unc, probs)
    return bins.astype(np.int64), unc.astype(np.int64)


def sample_bit_errors(rng: np.random.Generator, bits: np.ndarray, ber: np.ndarray) -> np.ndarray:
    """Bit errors seen by a PRBS checker over ``bits`` bits at ``ber`` (Poisson)."""
    lam = np.asarray(bits, dtype=float) * np.asarray(ber, dtype=float)
    return rng.poisson(lam).astype(np.int64)


# --- records ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FecStats:
    """RS-FEC counters of one port since the last clear."""

    device: str
    port: str
    mode: str  # "rs544" (RS(544,514) KP4)
    total_codewords: int
    corrected_codewords: int  # codewords with 1..15 symbol errors
    uncorrectable_codewords: int
    symbol_errors: int  # corrected symbols (sum of k * bin_k)
    bins: tuple[int, ...]  # codewords with k symbol errors, k = 0..15
    pre_fec_ber: float  # estimated over the last second, like a device's FEC BER readout
    lanes_pre_fec_ber: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PrbsLane:
    """One lane's PRBS checker, as a switch or BERT reports it."""

    lane: int  # 1-based
    pattern: str
    enabled: bool
    locked: bool
    bits: int
    errors: int
    ber: float  # errors / bits (0 when no bits)
    loss_of_lock_count: int
    locked_s: float

package dev.crucible.runner.study;

/** How a finished trial ended. A trial still running is never recorded. */
public enum TrialState {
    /** Every objective has a value; the sampler learns from it. */
    COMPLETE,
    /** The trial threw or produced no usable score; it keeps its number but the sampler ignores it. */
    FAIL
}

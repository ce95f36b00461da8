/**
 * Studies: seeded multi-objective optimization of an experiment's parameters, journaled to disk.
 *
 * <h2>Shape</h2>
 * A {@link dev.crucible.runner.study.Study} hands out {@link dev.crucible.runner.study.Trial}s; the experiment asks
 * each trial for parameters as it needs them ({@code suggestFloat}, {@code suggestInt}, {@code suggestCategorical};
 * define-by-run, so parameters may depend on earlier ones or appear only in some trials), scores the result and
 * tells the study. Every finished trial goes to the {@link dev.crucible.runner.study.StudyJournal}. Trial
 * {@code n} draws all its randomness from a generator seeded with a hash of (study seed, n), and the sampler keeps
 * no state besides the finished trials; so replaying a journal restores the sampler exactly and a resumed study
 * continues with the parameters an uninterrupted one would have drawn.
 *
 * <h2>The sampler: multi-objective, multivariate TPE</h2>
 * {@link dev.crucible.runner.study.TpeSampler} follows the tree-structured Parzen estimator as Optuna describes and
 * ships it (Bergstra et al. 2011; Falkner et al. 2018 for the multivariate kernel; Ozaki et al. 2020/2022 for the
 * multi-objective split and weights). It was written from those descriptions, not translated.
 * <ol>
 * <li><b>Startup.</b> Until {@code nStartupTrials} trials (default 60) have completed, the parameters follow a
 *     Latin hypercube ({@link dev.crucible.runner.study.LatinHypercube}): trial n of the first {@code nStartupTrials}
 *     takes, for each parameter, its own one of {@code nStartupTrials} equal strata of the range (log range for log
 *     floats; a categorical's choices get equal shares), in an order shuffled per parameter from the seed, and a
 *     uniform value inside it. Independent uniform draws (what {@link dev.crucible.runner.study.RandomSampler} does,
 *     and Optuna's startup) leave gaps and clumps in 60 draws; the stratified start covers each range evenly, which
 *     halved the spread of the hypervolume after 50 trials in docs/search.md's comparison. Trials numbered past the
 *     design (failed startup trials) draw uniformly.</li>
 * <li><b>Search space.</b> Afterwards the parameters that every complete trial used, with the same distribution,
 *     are sampled jointly when the trial starts. Parameters outside that set (conditional or new ones) are sampled
 *     one at a time with the same procedure restricted to one dimension, from the trials that have them.</li>
 * <li><b>Good and bad.</b> Of the n complete trials, {@code ceil(n/10)}, at most 25, are "good" (Optuna's default
 *     gamma). Objectives are turned into losses (maximized ones change sign; {@code none} objectives are dropped).
 *     One loss: the lowest losses are good (ties by trial number). Several: whole non-dominated fronts are taken
 *     while they fit; the first front that does not fit is cut down by <i>greedy hypervolume subset
 *     selection</i>: repeatedly take the front member that adds the most hypervolume to those already taken,
 *     with the reference point {@code max(1.1 w, 0.9 w)} per coordinate, w being the front's worst value. This is
 *     what Optuna does since 3.x; we chose it over the NSGA-II crowding distance because hypervolume is the
 *     measure a multi-objective result is judged by and is Pareto-compliant, whereas crowding only spreads
 *     points, and because with 2–3 objectives and at most 25 good trials its cost is negligible.</li>
 * <li><b>Weights.</b> Good trials: equal with one objective; with several, each Pareto-optimal good trial is
 *     weighted by its exclusive hypervolume contribution within the good set divided by the largest one (dominated
 *     good trials get 1e-12): this pulls sampling toward the parts of the front that matter most (MOTPE).
 *     Bad trials: the newest 25 weigh 1, older ones ramp linearly from 1/n up to 1.</li>
 * <li><b>Parzen estimators.</b> l(x) from the good trials, g(x) from the bad ones, each a weighted mixture of one
 *     kernel per trial plus a prior kernel of weight 1 (weights normalized to sum 1). A kernel is a product over
 *     the parameters (multivariate: one kernel covers a whole observation, so correlations between parameters
 *     survive, unlike a product of one-dimensional mixtures):
 *     <ul>
 *     <li>floats: a Gaussian truncated to [low, high] (in log space for log floats), centred on the observed value;
 *     integers: the same on [low − ½, high + ½], the value's probability being the kernel's mass over its unit bin;</li>
 *     <li>bandwidth, joint sampling: σ = 0.2 · n<sup>−1/(d+4)</sup> · range (a Scott-like rule; n observations in
 *         this estimator, d parameters); one-dimensional sampling: σ is the larger distance to the sorted neighbours
 *         (the prior mean counts as a neighbour; the outermost kernels use their inner neighbour only);</li>
 *     <li>clip ("magic clip"): σ is kept within [range / min(100, n + 2), range];</li>
 *     <li>prior: a Gaussian at the middle of the range with σ = range, truncated the same way;</li>
 *     <li>categorical: an observation's kernel is (prior/(n+1) on every choice, + 1 on the observed one),
 *         normalized; the prior kernel is uniform.</li>
 *     </ul></li>
 * <li><b>Candidates.</b> Draw {@code nCandidates} (default 128) points from l(x) (pick a kernel by weight, then
 *     each coordinate from it; truncated Gaussians by inverse CDF) and keep the one maximizing
 *     log l(x) − log g(x), the first on ties.</li>
 * </ol>
 * With no optimized objective the sampler stays random. Failed trials keep their number but teach nothing, and
 * so do complete trials with a NaN optimized score. Hypervolume is computed exactly (2-D sweep, slicing above).
 *
 * <h2>Journal</h2>
 * See {@link dev.crucible.runner.study.StudyJournal}: JSON lines, a header then one line per finished trial, each
 * written with one write and fsync'ed.
 */
package dev.crucible.runner.study;

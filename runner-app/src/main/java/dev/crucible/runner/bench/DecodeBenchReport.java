package dev.crucible.runner.bench;

import dev.crucible.api.model.ModelCost;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.ToDoubleFunction;

/**
 * The outcome of a {@link DecodeBenchmark}: per round and as medians over rounds. Each ratio is computed per round
 * against that round's own ceilings, then the median is taken.
 *
 * <ul>
 *   <li>prefill: achieved FLOP/s (causal attention and the last token's head included) over the matmul ceiling;</li>
 *   <li>decode at batch 1: achieved bytes/s (every weight once per token, plus the KV cache read) over the memory
 *       read ceiling, which is what bounds it;</li>
 *   <li>decode at a larger batch: achieved FLOP/s over the matmul ceiling.</li>
 * </ul>
 *
 * @param memory peak resident memory of loading and of the runs, empty where the OS does not report it
 */
public record DecodeBenchReport(DecodeBenchmark.Settings settings, DType dtype, ModelCost cost,
                                List<DecodeBenchmark.Round> rounds, Optional<DecodeBenchmark.PeakMemory> memory) {

    public DecodeBenchReport {
        rounds = List.copyOf(rounds);
    }

    /** Mean number of keys a decode step attends over. */
    double meanContext() {
        return settings.promptLength() + settings.newTokens() / 2.0;
    }

    public double prefillTokensPerSecond() {
        return median(round -> prefillTokensPerSecond(round));
    }

    public double prefillRatioToMatmul() {
        return median(round -> prefillGflops(round) / round.matmulGflops());
    }

    public double decodeTokensPerSecond() {
        return median(round -> decodeTokensPerSecond(round));
    }

    /** Achieved bytes/s over the memory read ceiling; the bound at batch 1. */
    public double decodeRatioToBandwidth() {
        return median(round -> decodeGbs(round) / round.bandwidthGbs());
    }

    /** Achieved FLOP/s over the matmul ceiling; the bound of a large batch. */
    public double decodeRatioToMatmul() {
        return median(round -> decodeGflops(round) / round.matmulGflops());
    }

    public double matmulGflops() {
        return median(DecodeBenchmark.Round::matmulGflops);
    }

    public double bandwidthGbs() {
        return median(DecodeBenchmark.Round::bandwidthGbs);
    }

    /** Whether llama-bench ran beside every round. */
    public boolean hasPeer() {
        return !rounds.isEmpty() && rounds.stream().allMatch(round -> round.peer().isPresent());
    }

    /** Median over rounds of Crucible's prefill tokens/s over llama-bench's in the same round. */
    public double prefillRatioToPeer() {
        return median(round -> prefillTokensPerSecond(round) / round.peer().orElseThrow().prefillTokensPerSecond());
    }

    /** Median over rounds of Crucible's decode tokens/s over llama-bench's in the same round. */
    public double decodeRatioToPeer() {
        return median(round -> decodeTokensPerSecond(round) / round.peer().orElseThrow().decodeTokensPerSecond());
    }

    private double peerPrefill() {
        return median(round -> round.peer().orElseThrow().prefillTokensPerSecond());
    }

    private double peerDecode() {
        return median(round -> round.peer().orElseThrow().decodeTokensPerSecond());
    }

    /** Peak resident memory over the weights' bytes, or NaN where unknown. */
    public double rssToWeights() {
        return memory.map(m -> (double) m.peakBytes() / cost.weightBytes()).orElse(Double.NaN);
    }

    private double prefillTokensPerSecond(DecodeBenchmark.Round round) {
        return settings.batch() * settings.promptLength() / round.prefillSeconds();
    }

    private double prefillGflops(DecodeBenchmark.Round round) {
        return cost.prefillFlops(settings.batch(), settings.promptLength()) / round.prefillSeconds() / 1e9;
    }

    private double decodeTokensPerSecond(DecodeBenchmark.Round round) {
        return settings.batch() * round.decodeSteps() / round.decodeSeconds();
    }

    private double decodeStepsPerSecond(DecodeBenchmark.Round round) {
        return round.decodeSteps() / round.decodeSeconds();
    }

    private double decodeGbs(DecodeBenchmark.Round round) {
        return cost.decodeStepBytes(settings.batch(), meanContext()) * decodeStepsPerSecond(round) / 1e9;
    }

    private double decodeGflops(DecodeBenchmark.Round round) {
        return cost.decodeStepFlops(settings.batch(), meanContext()) * decodeStepsPerSecond(round) / 1e9;
    }

    private double median(ToDoubleFunction<DecodeBenchmark.Round> metric) {
        return DecodeBenchmark.median(rounds.stream().mapToDouble(metric).toArray());
    }

    /**
     * The machine-readable form.
     *
     * @param model   what was benchmarked (a folder or a hub id)
     * @param threads compute threads, or null where the backend chose
     * @param notes   environment facts that change the numbers (OPENBLAS_CORETYPE, thread variables, ...)
     */
    public Map<String, Object> toJson(String model, Integer threads, Map<String, String> notes) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("model", model);
        json.put("dtype", dtype.userName());
        json.put("batch", settings.batch());
        json.put("prompt_len", settings.promptLength());
        json.put("new_tokens", settings.newTokens());
        json.put("rounds", settings.rounds());
        json.put("threads", threads);
        json.put("ceilings", Map.of("matmul_gflops", round1(matmulGflops()), "bandwidth_gbs", round1(bandwidthGbs())));

        Map<String, Object> prefill = new LinkedHashMap<>();
        prefill.put("tokens_per_s", round1(prefillTokensPerSecond()));
        prefill.put("gflops", round1(median(this::prefillGflops)));
        prefill.put("ratio_to_matmul", round3(prefillRatioToMatmul()));
        json.put("prefill", prefill);

        Map<String, Object> decode = new LinkedHashMap<>();
        decode.put("tokens_per_s", round1(decodeTokensPerSecond()));
        decode.put("ms_per_step", round1(1000 / median(this::decodeStepsPerSecond)));
        if (settings.batch() == 1) {
            decode.put("gbs", round1(median(this::decodeGbs)));
            decode.put("ratio_to_bandwidth", round3(decodeRatioToBandwidth()));
        } else {
            decode.put("gflops", round1(median(this::decodeGflops)));
            decode.put("ratio_to_matmul", round3(decodeRatioToMatmul()));
        }
        json.put("decode", decode);

        json.put("weights_bytes", cost.weightBytes());
        json.put("decode_bytes_per_step", Math.round(cost.decodeStepBytes(settings.batch(), meanContext())));
        json.put("prefill_flops", cost.prefillFlops(settings.batch(), settings.promptLength()));
        json.put("peak_rss_bytes", memory.map(DecodeBenchmark.PeakMemory::peakBytes).orElse(null));
        json.put("rss_to_weights", memory.isPresent() ? round3(rssToWeights()) : null);
        json.put("peak_rss_load_bytes", memory.map(DecodeBenchmark.PeakMemory::loadBytes).orElse(null));
        json.put("peak_rss_runs_bytes", memory.map(DecodeBenchmark.PeakMemory::runBytes).orElse(null));
        json.put("peak_rss_runs_only", memory.map(DecodeBenchmark.PeakMemory::runsOnly).orElse(null));
        json.put("env", notes);
        if (hasPeer()) {
            Map<String, Object> peer = new LinkedHashMap<>();
            peer.put("tool", "llama-bench");
            peer.put("prefill_tokens_per_s", round1(peerPrefill()));
            peer.put("decode_tokens_per_s", round2(peerDecode()));
            peer.put("prefill_ratio", round3(prefillRatioToPeer()));
            peer.put("decode_ratio", round3(decodeRatioToPeer()));
            peer.put("decode_depth", rounds.getFirst().peer().orElseThrow().decodeDepth());
            json.put("llama_cpp", peer);
        }

        List<Map<String, Object>> perRound = new ArrayList<>();
        for (DecodeBenchmark.Round round : rounds) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("matmul_gflops", round1(round.matmulGflops()));
            r.put("bandwidth_gbs", round1(round.bandwidthGbs()));
            r.put("prefill_s", round3(round.prefillSeconds()));
            r.put("decode_s", round3(round.decodeSeconds()));
            r.put("decode_steps", round.decodeSteps());
            r.put("ceilings_method", round.before().method());
            round.peer().ifPresent(peer -> {
                r.put("llama_cpp_prefill_tokens_per_s", round1(peer.prefillTokensPerSecond()));
                r.put("llama_cpp_decode_tokens_per_s", round2(peer.decodeTokensPerSecond()));
            });
            perRound.add(r);
        }
        json.put("per_round", perRound);
        return json;
    }

    /** Rows of the human table: what, value, ceiling or bound, ratio. */
    public List<String[]> table() {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"matmul ceiling", fmt("%.1f GFLOP/s", matmulGflops()), "", ""});
        rows.add(new String[] {"memory read ceiling", fmt("%.1f GB/s", bandwidthGbs()), "", ""});
        rows.add(new String[] {"prefill", fmt("%.1f tokens/s", prefillTokensPerSecond()),
                fmt("%.1f GFLOP/s", median(this::prefillGflops)), percent(prefillRatioToMatmul()) + " of matmul"});
        if (settings.batch() == 1) {
            rows.add(new String[] {"decode", fmt("%.2f tokens/s", decodeTokensPerSecond()),
                    fmt("%.1f GB/s", median(this::decodeGbs)), percent(decodeRatioToBandwidth()) + " of bandwidth"});
        } else {
            rows.add(new String[] {"decode", fmt("%.2f tokens/s", decodeTokensPerSecond()),
                    fmt("%.1f GFLOP/s", median(this::decodeGflops)), percent(decodeRatioToMatmul()) + " of matmul"});
        }
        if (hasPeer()) {
            rows.add(new String[] {"llama.cpp prefill", fmt("%.1f tokens/s", peerPrefill()), "",
                    "Crucible " + fmt("%.2f", prefillRatioToPeer()) + " x llama.cpp"});
            rows.add(new String[] {"llama.cpp decode", fmt("%.2f tokens/s", peerDecode()), "",
                    "Crucible " + fmt("%.2f", decodeRatioToPeer()) + " x llama.cpp"});
        }
        rows.add(new String[] {"weights", fmt("%.1f MiB", cost.weightBytes() / 1048576.0), "", ""});
        memory.ifPresent(m -> {
            rows.add(new String[] {"peak RSS", fmt("%.1f MiB", m.peakBytes() / 1048576.0), "",
                    fmt("%.2f", rssToWeights()) + " x weights"});
            rows.add(new String[] {"  of loading", fmt("%.1f MiB", m.loadBytes() / 1048576.0), "", ""});
            rows.add(new String[] {"  of the runs", fmt("%.1f MiB", m.runBytes() / 1048576.0), "", ""});
        });
        return rows;
    }

    private static String percent(double ratio) {
        return fmt("%.1f%%", 100 * ratio);
    }

    private static String fmt(String format, double value) {
        return String.format(Locale.ROOT, format, value);
    }

    private static double round1(double value) {
        return Math.round(value * 10) / 10.0;
    }

    private static double round2(double value) {
        return Math.round(value * 100) / 100.0;
    }

    private static double round3(double value) {
        return Math.round(value * 1000) / 1000.0;
    }
}

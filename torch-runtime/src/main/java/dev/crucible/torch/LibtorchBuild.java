package dev.crucible.torch;

import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Which natives of libtorch a process loads. JavaCPP publishes one natives jar per platform and, for NVIDIA GPUs,
 * a second one under the platform extension {@code -gpu} ({@code org/bytedeco/pytorch/linux-x86_64-gpu/}). With
 * the system property {@code org.bytedeco.javacpp.platform.extension} unset, JavaCPP's loader tries every extension
 * a preset declares, the GPU build first, whenever its jar is on the classpath; set, it loads the one named.
 * {@link TorchRuntime#load(LibtorchBuild)} therefore always sets it: the CPU backend of a CUDA distribution loads the
 * CPU build (the GPU build's {@code libtorch_cpu.so} itself needs {@code libcudart.so.13} and
 * {@code libcupti.so.13}), and the cuda backend the GPU build.
 *
 * @param name               what the user calls it: {@code CPU}, {@code CUDA}
 * @param platformExtension  JavaCPP's platform extension for the pytorch natives ({@code ""} or {@code -gpu})
 * @param rebuildHint        what to do when the natives are missing, e.g. {@code rebuild with -Pcuda}
 * @param gateLibrary        a library of the build opened on its own before JavaCPP loads it ({@code ""}: none), see
 *                           {@link TorchRuntime#load(LibtorchBuild)}
 */
public record LibtorchBuild(String name, String platformExtension, String rebuildHint, String gateLibrary) {

    /** The platform's own build: the CPU on Linux, the CPU and MPS on macOS. */
    public static final LibtorchBuild DEFAULT = new LibtorchBuild("CPU", "", "rebuild without a GPU profile", "");

    /**
     * The CUDA 13 build for NVIDIA GPUs ({@code -Pcuda}): needs CUDA 13, cuDNN 9 and NCCL 2 on the machine. Its gate
     * is {@code libtorch_cuda.so}, which links every one of them.
     */
    public static final LibtorchBuild CUDA = new LibtorchBuild("CUDA", "-gpu", "rebuild with -Pcuda",
            "libtorch_cuda.so");

    /** Native packages whose folders {@link TorchRuntime} extracts before the first load; only pytorch has a GPU build. */
    static final List<String> NATIVE_PACKAGES = List.of("javacpp", "openblas", "pytorch");

    public LibtorchBuild {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(platformExtension, "platformExtension is null");
        Objects.requireNonNull(rebuildHint, "rebuildHint is null");
        Objects.requireNonNull(gateLibrary, "gateLibrary is null");
    }

    /** The resource folder of {@code nativePackage}'s natives for {@code platform}, e.g. {@code /org/bytedeco/pytorch/linux-x86_64-gpu/}. */
    String nativeFolder(String nativePackage, String platform) {
        String extension = nativePackage.equals("pytorch") ? platformExtension : "";
        return "/org/bytedeco/" + nativePackage + "/" + platform + extension + "/";
    }

    /**
     * Whether this build's pytorch natives for {@code platform} are on {@code loader}'s classpath: a resource lookup,
     * which opens the jar's directory and loads nothing.
     */
    public boolean presentIn(ClassLoader loader, String platform) {
        return loader.getResource(nativeFolder("pytorch", platform).substring(1)) != null;
    }

    /**
     * JavaCPP's name for this machine's platform ({@code linux-x86_64}, {@code macosx-arm64}), worked out as JavaCPP
     * does but without touching its classes, so a probe can ask before anything of JavaCPP is initialized.
     */
    public static String hostPlatform() {
        return platform(System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
    }

    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT);
        if (os.startsWith("mac os x") || os.startsWith("darwin")) {
            os = "macosx";
        } else if (os.startsWith("windows")) {
            os = "windows";
        } else if (os.contains(" ")) {
            os = os.substring(0, os.indexOf(' '));
        }
        String arch = osArch.toLowerCase(Locale.ROOT);
        arch = switch (arch) {
            case "amd64", "x86-64", "x64" -> "x86_64";
            case "aarch64", "arm64" -> "arm64";
            default -> arch;
        };
        return os + "-" + arch;
    }

    @Override
    public String toString() {
        return name + " build of libtorch";
    }
}

package dev.crucible.runner.cli;

/**
 * What libtorch build the distribution carries, read from the JavaCPP presets' jar manifests and the natives
 * jars present on the classpath. Reading a manifest loads nothing native.
 */
final class LibtorchInfo {
    private LibtorchInfo() {
    }

    static String describe() {
        Package presets = packageOf("org.bytedeco.pytorch.global.torch");
        if (presets == null) {
            return "not on the classpath";
        }
        String version = presets.getImplementationVersion() != null ? presets.getImplementationVersion() : "unknown version";
        StringBuilder builds = new StringBuilder();
        for (String platform : new String[] {"linux-x86_64", "linux-x86_64-gpu", "linux-arm64", "macosx-arm64", "macosx-x86_64", "windows-x86_64"}) {
            if (LibtorchInfo.class.getClassLoader().getResource("org/bytedeco/pytorch/" + platform + "/") != null) {
                builds.append(builds.isEmpty() ? "" : ", ").append(platform);
            }
        }
        return "presets " + version + "; native builds on the classpath: " + (builds.isEmpty() ? "none" : builds);
    }

    private static Package packageOf(String className) {
        try {
            return Class.forName(className, false, LibtorchInfo.class.getClassLoader()).getPackage();
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }
}

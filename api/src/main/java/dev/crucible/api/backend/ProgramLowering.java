package dev.crucible.api.backend;

/**
 * What a backend that compiles the model definition ahead of time offers besides running it: lowering one model at
 * one shape to the programs a run would compile, written into a folder, and compiling them for a device topology
 * where its compiler needs no device, so that a user learns on a laptop whether and how a model fits an
 * accelerator they do not have ({@code runner lower}). A backend that runs ops eagerly does not implement it.
 */
public interface ProgramLowering {

    /**
     * Writes every program and its manifest into {@code request.folder()} and compiles what can be compiled.
     *
     * @param probe this backend's own probe (where its compiler was found, or why none was)
     */
    LoweringReport lower(LoweringRequest request, Probe probe);
}

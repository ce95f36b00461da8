package dev.crucible.api.cyclefixture.b;

import dev.crucible.api.cyclefixture.a.A;

/** The other half of the deliberate package cycle for {@code PackageCyclesTest}. */
public record B(A a) {
}

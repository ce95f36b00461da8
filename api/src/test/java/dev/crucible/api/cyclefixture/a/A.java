package dev.crucible.api.cyclefixture.a;

import dev.crucible.api.cyclefixture.b.B;

/** Half of a deliberate package cycle for {@code PackageCyclesTest}. */
public record A(B b) {
}

package dev.crucible.scorers;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.scoring.ScorerProvider;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ServiceRegistrationTest {

    @Test
    void bothProvidersAreFoundByServiceLoader() {
        Set<String> names = ServiceLoader.load(ScorerProvider.class).stream()
                .map(p -> p.get().name()).collect(Collectors.toSet());
        assertEquals(Set.of("refusals", "kl_divergence"), names);
    }
}

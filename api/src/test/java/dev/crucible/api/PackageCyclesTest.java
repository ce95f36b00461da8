package dev.crucible.api;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import org.junit.jupiter.api.Test;

/**
 * The plugin contract's packages depend on each other in one direction only: a cycle (tensor and model naming each
 * other's types, as {@code DType} in {@code model} once made them) means neither can be understood, or moved to a
 * module of its own, without the other.
 */
class PackageCyclesTest {
    /** Every package is its own slice, the root package {@code dev.crucible.api} included. */
    static ArchRule noPackageCycles() {
        return slices().matching("dev.crucible.(**)").should().beFreeOfCycles();
    }

    @Test
    void apiPackagesFormNoCycle() {
        JavaClasses api = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.crucible.api");
        noPackageCycles().check(api);
    }

    @Test
    void theRuleFailsOnACycle() {
        JavaClasses fixture = new ClassFileImporter().importPackages("dev.crucible.api.cyclefixture");
        assertThrows(AssertionError.class, () -> noPackageCycles().check(fixture));
    }
}

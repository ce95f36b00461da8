package dev.crucible.huggingface.template;

import java.util.List;

/** The left side of {@code set}, {@code for} and {@code with}: a name, names to unpack, or a namespace attribute. */
sealed interface Target {

    void assign(Scope scope, Object value);

    record Name(String name) implements Target {
        @Override
        public void assign(Scope scope, Object value) {
            scope.set(name, value);
        }
    }

    /** {@code a, b}: unpacks exactly as many items as there are names. */
    record Unpack(List<Target> items) implements Target {
        @Override
        public void assign(Scope scope, Object value) {
            List<?> values = Py.iterate(value);
            if (values.size() > items.size()) {
                throw ChatTemplateException.valueError("too many values to unpack (expected " + items.size() + ")");
            }
            if (values.size() < items.size()) {
                throw ChatTemplateException.valueError("not enough values to unpack (expected " + items.size()
                        + ", got " + values.size() + ")");
            }
            for (int i = 0; i < items.size(); i++) {
                items.get(i).assign(scope, values.get(i));
            }
        }
    }

    /** {@code ns.attribute}: changes the namespace object itself, so the change outlives loop scopes. */
    record NamespaceAttribute(String namespace, String attribute) implements Target {
        @Override
        public void assign(Scope scope, Object value) {
            if (!(scope.resolve(namespace) instanceof Namespace target)) {
                throw ChatTemplateException.runtime("TemplateRuntimeError",
                        "cannot assign attribute on non-namespace object");
            }
            target.set(attribute, value);
        }
    }
}

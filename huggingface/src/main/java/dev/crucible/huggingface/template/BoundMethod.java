package dev.crucible.huggingface.template;

/** A Python method taken from a value, such as {@code message.content.startswith}, ready to be called. */
record BoundMethod(Object self, String method) implements TemplateCallable {

    @Override
    public Object call(RenderState state, Arguments arguments) {
        return PyMethods.call(self, method, arguments);
    }

    @Override
    public String name() {
        return Py.typeName(self) + "." + method;
    }
}

/**
 * {@code runner finetune} and {@code runner merge}, written once for every backend.
 *
 * <p>The flow: {@link dev.crucible.runner.finetune.TrainingDataReader} reads JSONL rows into conversations,
 * prompt/completion pairs or plain text; {@link dev.crucible.runner.finetune.ExampleEncoder} renders them with the
 * model's chat template and labels only the assistant's tokens ({@link dev.crucible.runner.finetune.AssistantSpans}
 * documents how the spans are found), or, on a model without one, as plain text the way TRL does; {@link dev.crucible.runner.finetune.MethodChoice} picks LoRA, QLoRA or full training;
 * {@link dev.crucible.runner.finetune.TrainingPlan} lays out every optimizer step in advance and
 * {@link dev.crucible.runner.finetune.FinetuneLoop} runs it on the backend's
 * {@link dev.crucible.api.train.TrainingSession} with {@link dev.crucible.runner.finetune.LearningRateSchedule};
 * {@link dev.crucible.runner.finetune.FinetuneOutput} writes a PEFT adapter or a model folder.
 * {@link dev.crucible.runner.finetune.FinetuneRun} ties it together; nothing here asks which device trains.
 *
 * <p>{@link dev.crucible.runner.finetune.DemoModel} finds the committed demo model ({@code demo-model/}).
 */
package dev.crucible.runner.finetune;

"""The ids and labels TRL's SFTTrainer trains on, for TrlOracleTest.

usage: python trl_sft_tokenize.py MODEL_DIR ROWS.json
ROWS.json: {"NAME": {"rows": [...], "completion_only_loss": true|false|null}, ...}
prints {"NAME": [{"input_ids": [...], "labels": [...]}, ...], ...}: the trainer's prepared train_dataset.
"""
import json
import sys
import tempfile

from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

model_dir, cases_file = sys.argv[1], sys.argv[2]
with open(cases_file) as f:
    cases = json.load(f)
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir)
result = {}
for name, case in cases.items():
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(output_dir=out, max_length=1024, report_to=[], use_cpu=True, bf16=False,
                         completion_only_loss=case["completion_only_loss"])
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(case["rows"]),
                             processing_class=tokenizer)
        result[name] = [{"input_ids": list(row["input_ids"]), "labels": list(row["labels"])}
                        for row in trainer.train_dataset]
print(json.dumps(result))

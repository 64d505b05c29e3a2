"""Makes model folders for chat-template.test: stories260K-hf's files
(linked) with a tokenizer_config.json (or chat_template.jinja, or a
processor's chat_template.json) that carries a chat template in each way a
checkpoint can, or a malformed one.

  make_chat_template_dirs.py STORIES260K_HF OUT
"""
import json
import os
import sys

source, out = sys.argv[1:3]
TEMPLATE = "<chat>{% for m in messages %}{{ m.content }}\n{% endfor %}"
CONFIGS = {
    "string": TEMPLATE,
    "named": [{"name": "tool_use", "template": "tools"},
              {"name": "default", "template": "named " + TEMPLATE}],
    "no-default": [{"name": "tool_use", "template": "tools"},
                   {"name": "rag", "template": "rag"}],
    "nul": "a\u0000b",
    "number": 42,
    "jinja-file": "overridden by chat_template.jinja",
    "processor-file": "overridden by chat_template.json",
    "processor-number": "overridden by chat_template.json",
}
with open(os.path.join(source, "tokenizer_config.json")) as f:
    base = json.load(f)
for name, chat_template in CONFIGS.items():
    folder = os.path.join(out, name)
    os.makedirs(folder)
    for file in ("config.json", "model.safetensors", "tokenizer.model"):
        os.symlink(os.path.join(source, file), os.path.join(folder, file))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(dict(base, chat_template=chat_template), f)
with open(os.path.join(out, "jinja-file", "chat_template.jinja"), "w") as f:
    f.write("from the file " + TEMPLATE)
with open(os.path.join(out, "processor-file", "chat_template.json"), "w") as f:
    json.dump({"chat_template": "from the processor " + TEMPLATE}, f)
with open(os.path.join(out, "processor-number", "chat_template.json"), "w") as f:
    json.dump({"chat_template": 7}, f)
with open(os.path.join(out, "given.jinja"), "w") as f:
    f.write("given\t\"quoted\" ??= \\ " + TEMPLATE)

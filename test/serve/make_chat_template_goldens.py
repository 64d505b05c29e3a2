"""Renders chat templates with Jinja 2 configured as Hugging Face
transformers' apply_chat_template configures it (trim_blocks and
lstrip_blocks, raise_exception, strftime_now, tojson: below) and writes
Inputs/chat-templates.json, the goldens ChatTemplateTest compares tfm-serve's
Jinja subset against.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/serve/make_chat_template_goldens.py   # needs python3-jinja2

Templates: the defaults transformers 4.40.2 ships (LLaMA-2, ChatML), the
ones popular checkpoints carry in tokenizer_config.json (Zephyr/TinyLlama,
Gemma, Qwen2, Mistral-Instruct, Phi-3, Llama-3), and one written to use
every construct of the subset. The special tokens are stories260K-hf's
(<s>, </s>, <unk>), whose tokenizer renders them.

Tool-calling templates: the real ones in Inputs/tool-templates/ (Qwen 2.5
and 3, Llama 3.1 and 3.2, Mistral Nemo and Small 3.2, Hermes 2 Pro and 3),
over conversations that call OpenAI-style `tools` and one that does not.

Vision-language templates: the real ones in Inputs/vision-templates/
(llava-hf's LLaVA 1.5, Qwen2.5-VL, Gemma 3), which loop over typed content
parts ({"type": "image"}, {"type": "text"}), over conversations with
images; llava-hf's marks the assistant's text with {% generation %}, which
later transformers define (the GenerationTag extension below renders its
body, as theirs does when no mask is asked for).

Every template is rendered with one Jinja environment (compile_template):
transformers 4.40.2's _compile_jinja_template, the version this suite has
as a reference, plus two definitions of later versions. strftime_now, as
later versions define it (Mistral Small 3.2 calls it), on a fixed clock
(NOW) that ChatTemplateTest sets too. And the tojson filter as 4.42+
define it, json.dumps with its keywords (keys in their order, non-ASCII
kept, a plain string): rendering `tools` came with transformers 4.42+, so
tool-calling models were trained on prompts that tojson wrote, not
Jinja's own that 4.40.2 leaves (keys sorted, ' < > & and non-ASCII
escaped, and Markup, which makes `+` HTML-escape the plain string joined
to it: Mistral Nemo's tool prompt read `&#34;parameters&#34;`). Of the
other templates only "subset" calls tojson, so only its goldens differ
from what 4.40.2's apply_chat_template renders; the rest are 4.40.2's
byte for byte.
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

from transformers import AutoTokenizer
from transformers.models.llama.tokenization_llama import LlamaTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "..", "shared", "models", "stories260K-hf")

tokenizer = AutoTokenizer.from_pretrained(MODEL, use_fast=False)
tokenizer.use_default_system_prompt = False

TEMPLATES = {
    "llama2": LlamaTokenizer.default_chat_template.fget(tokenizer),
    "chatml": super(LlamaTokenizer, tokenizer).default_chat_template,
    "zephyr": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    "gemma": "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
    "qwen2": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
    "mistral": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
    "phi3": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}",
    "llama3": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    # Every construct of the subset, laid out over lines as people write
    # templates, so that trim_blocks and lstrip_blocks matter.
    "subset": """{#- a comment -#}
{%- set ns = namespace(system='', turns=0, roles=[]) %}
{%- for m in messages if m.role != 'system' %}
    {%- set ns.turns = ns.turns + 1 %}
    {%- set ns.roles = ns.roles + [m['role'] | upper] %}
{%- else %}
    [no turns]
{%- endfor %}
{%- if messages[0].role == 'system' %}
  {%- set ns.system = messages[0]['content'].strip() %}
{%- endif %}
{{ bos_token ~ 'turns=' ~ ns.turns ~ ' roles=' ~ ns.roles | join(',') }}
{% if ns.system is defined and ns.system %}
    <<{{ ns.system | replace('kind', 'KIND') | title }}>>
{% endif %}
{% for message in messages[1:] if message is mapping %}
  {% set content = message.content %}
  {% if loop.first %}[first of {{ loop.length }}]{% endif %}
  {{- loop.index }}/{{ loop.revindex0 }} {{ message.role | capitalize }}: {{ content | trim }}
  {%- if content.startswith(' ') or content.endswith(' ') %} (padded){% endif %}
  {%- if 'cat' in content and not 'dog' in content %} (cat){% endif %}
  {%- if loop.previtem is defined %} after {{ loop.previtem.role }}{% endif %}

{% endfor %}
{{ messages | length }} {{ messages[-1]['content'][:5] }}|{{ messages[-1]['content'][::-1][:3] }}
{{ (7 // 2) ~ (7 % 3) ~ (-7 // 2) ~ (-7 % 3) ~ (2 * 3 + 1) ~ (1 / 4) ~ (3 - 5) }}
{{ messages[0] | tojson }} {{ {'b': [1, 2.5, none, true], 'a': 'x<y'} | tojson }}
{{ messages[0] | tojson(indent=2) }} {{ messages[-2:] | tojson(sort_keys=true, ensure_ascii=true) }}
{{ {'b': [1, 1000000000000000.0, {}], 'a': "it's"} | tojson(indent='\\t', separators=[';', '=']) }} {{ 1000000000000000.0 }}
{{ messages[0].get('name', 'anonymous') }} {{ messages[0].get('role') }} {{ messages[9] is undefined }}
{% for k, v in messages[0].items() %}{{ k }}={{ v | length }};{% endfor %}

{{ 'a,b,,c'.split(',') | list | length }} {{ '  x y  '.split() }} {{ [3, 1, 2] | reverse | list }} {{ [3, 1, 2] | first }}{{ [3, 1, 2] | last }}
{{ none }} {{ true }} {{ 1.0 }} {{ [1, 'two', none] }} {{ undefined_name }}|{{ undefined_name | default('fallback') }}|{{ '' | default('empty', true) }}
{{ 'yes' if add_generation_prompt else 'no' }} {{ range(3) | join('-') }} {{ range(1, 7, 2) | list }}
{{- ' ' ~ ('ok' if messages else 'empty') }}
{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}
""",
}

CONVERSATIONS = {
    "system-user": [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Once upon a time"},
    ],
    "three-turns": [
        {"role": "user", "content": "Tell me about a cat."},
        {"role": "assistant", "content": "  The cat sat on the mat.  "},
        {"role": "user", "content": "And then?"},
    ],
    "system-three-turns": [
        {"role": "system", "content": " You are kind and brief. "},
        {"role": "user", "content": "Hi!\nHow are \"you\"? It's 'fine'."},
        {"role": "assistant", "content": "Très bien — merci 😊"},
        {"role": "user", "content": "A dog and a cat"},
    ],
    "one-user": [{"role": "user", "content": "Lily"}],
}


NOW = "2025-03-09T14:05:07"


class GenerationTag(Extension):
    """{% generation %} ... {% endgeneration %}: its body, unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def compile_template(source):
    """transformers 4.40.2's _compile_jinja_template, plus strftime_now
    (datetime.now().strftime, on NOW) and tojson as later transformers
    define them."""
    if tuple(int(x) for x in jinja2.__version__.split(".")[:2]) < (3, 1):
        sys.exit("the tool templates need Jinja 3.1 (its `items` filter)")

    def raise_exception(message):
        raise TemplateError(message)

    def strftime_now(format):
        return datetime.datetime.fromisoformat(NOW).strftime(format)

    def tojson(x, ensure_ascii=False, indent=None, separators=None,
               sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    jinja_env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                              extensions=[GenerationTag])
    jinja_env.filters["tojson"] = tojson
    jinja_env.globals["raise_exception"] = raise_exception
    jinja_env.globals["strftime_now"] = strftime_now
    return jinja_env.from_string(source)


def render(compiled, messages, add_generation_prompt, variables={}):
    """apply_chat_template's call: the special tokens, then the keywords."""
    try:
        return {"expected": compiled.render(
            messages=messages, add_generation_prompt=add_generation_prompt,
            **{**tokenizer.special_tokens_map, **variables})}
    except TemplateError as e:  # raise_exception's
        return {"raises": str(e)}


cases = []
for name, template in TEMPLATES.items():
    compiled = compile_template(template)
    for conversation, messages in CONVERSATIONS.items():
        for add in (False, True):
            case = {"template": name, "conversation": conversation,
                    "add_generation_prompt": add}
            case.update(render(compiled, messages, add))
            cases.append(case)

TOOL_TEMPLATES = [
    "Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B",
    "meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct",
    "mistralai-Mistral-Nemo-Instruct-2407", "Mistral-Small-3.2-24B-Instruct-2506",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
]

# OpenAI's tools: JSON schemas with a description for every property (Hermes
# prints them), a string enum, an array (Hermes' json_to_python_type passes
# `spec|items` to itself, which Jinja's Undefined makes "list[Union[]]"),
# an integer, a union of types, and an apostrophe and a non-ASCII character
# for tojson to escape.
TOOLS = [
    {"type": "function", "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string",
                             "description": "The city's name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "The unit: \u00b0C or \u00b0F"},
            },
            "required": ["location"],
        },
    }},
    {"type": "function", "function": {
        "name": "search_flights",
        "description": "Find flights from one airport to others.",
        "parameters": {
            "type": "object",
            "properties": {
                "origin": {"type": "string", "description": "IATA code to leave from"},
                "destinations": {"type": "array", "items": {"type": "string"},
                                 "description": "IATA codes to fly to"},
                "max_stops": {"type": "integer", "description": "At most this many stops"},
                "budget": {"type": ["integer", "number"],
                           "description": "  The most to pay, in euros  "},
            },
            "required": ["origin", "destinations"],
        },
    }},
]

# Mistral's templates require a tool call id of 9 alphanumerics.
TOOL_CALL = [
    {"role": "user", "content": "What's the weather like in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "abc123XYZ", "type": "function", "function": {
            "name": "get_current_weather",
            "arguments": {"location": "Paris", "unit": "celsius"}}}]},
    {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_current_weather",
     "content": '{"temperature": 22, "condition": "sunny"}'},
]
# date_string fixes Llama 3.1's and 3.2's date; the plain conversation
# leaves it out, so that Llama 3.2 calls strftime_now.
TOOL_CONVERSATIONS = {
    "tool-call": {"messages": TOOL_CALL,
                  "variables": {"tools": TOOLS, "date_string": "26 Jul 2024"}},
    "tool-call-answered": {
        "messages": [{"role": "system", "content": "You book trips."}] + TOOL_CALL + [
            {"role": "assistant", "content": "It is 22 \u00b0C and sunny in Paris."},
            {"role": "user", "content": "Find me a flight there from Berlin."}],
        "variables": {"tools": TOOLS, "date_string": "26 Jul 2024"}},
    # Two calls at once, with ids Mistral refuses and arguments as OpenAI's
    # API sends them (a JSON string) in one: Llama refuses two calls.
    "parallel-calls": {
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": "get_current_weather", "arguments": {"location": "Paris"}}},
                {"id": "call_2", "type": "function", "function": {
                    "name": "get_current_weather",
                    "arguments": '{"location": "Rome"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "22"},
            {"role": "tool", "tool_call_id": "call_2", "content": "25"}],
        "variables": {"tools": TOOLS, "date_string": "26 Jul 2024"}},
    "plain": {"messages": CONVERSATIONS["system-three-turns"], "variables": {}},
}

def file_cases(folder, names, conversations):
    """Each template of Inputs/FOLDER/NAME.jinja over each conversation
    ({"messages", "variables"}), with and without the generation prompt."""
    cases = []
    for name in names:
        with open(os.path.join(HERE, "Inputs", folder, name + ".jinja")) as f:
            compiled = compile_template(f.read())
        for conversation_name, conversation in conversations.items():
            for add in (False, True):
                case = {"template": name, "conversation": conversation_name,
                        "add_generation_prompt": add}
                case.update(render(compiled, conversation["messages"], add,
                                   conversation["variables"]))
                cases.append(case)
    return cases


tool_cases = file_cases("tool-templates", TOOL_TEMPLATES, TOOL_CONVERSATIONS)

VISION_TEMPLATES = ["llava-hf-llava-1.5-7b-hf", "Qwen-Qwen2.5-VL-3B-Instruct",
                    "google-gemma-3-4b-it"]
# Content as tfm-serve gives such templates (OpenAiApi.cpp): lists of
# typed parts, a string one text part.
VISION_CONVERSATIONS = {
    "image-question": [{"role": "user", "content": [
        {"type": "image"}, {"type": "text", "text": "What is in the picture?"}]}],
    "two-images-turns": [
        {"role": "system", "content": [{"type": "text", "text": "You describe images."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "Compare"}, {"type": "image"},
            {"type": "text", "text": "and"}, {"type": "image"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "The first is a cat."}]},
        {"role": "user", "content": [{"type": "text", "text": "And the second?"}]}],
    "text-only": [{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}],
}

vision_cases = file_cases(
    "vision-templates", VISION_TEMPLATES,
    {name: {"messages": messages, "variables": {}}
     for name, messages in VISION_CONVERSATIONS.items()})

goldens = {
    "variables": {k: v for k, v in tokenizer.special_tokens_map.items()},
    "templates": TEMPLATES,
    "conversations": CONVERSATIONS,
    "cases": cases,
    # Templates in Inputs/tool-templates/, by file name less ".jinja".
    "tool_conversations": TOOL_CONVERSATIONS,
    "now": NOW,
    "tool_cases": tool_cases,
    # Templates in Inputs/vision-templates/.
    "vision_conversations": VISION_CONVERSATIONS,
    "vision_cases": vision_cases,
}
with open(os.path.join(HERE, "Inputs", "chat-templates.json"), "w") as f:
    json.dump(goldens, f, indent=1, ensure_ascii=False)
    f.write("\n")
raised = sum("raises" in c for c in cases + tool_cases)
print(f"{len(cases)} cases and {len(tool_cases)} with tool templates "
      f"({raised} raise) written", file=sys.stderr)

# The ids transformers gives the LLaMA-2 chat prompt of one conversation
# (apply_chat_template, tokenized), which tfm-serve must reproduce with
# stories260K-hf and test/tools/Inputs/llama2-chat.jinja (tfm-serve.test).
conversation = CONVERSATIONS["system-three-turns"]
ids = tokenizer.apply_chat_template(conversation, chat_template=TEMPLATES["llama2"],
                                    add_generation_prompt=True)
with open(os.path.join(HERE, "..", "tools", "Inputs", "llama2-chat.json"), "w") as f:
    json.dump({"messages": conversation, "prompt_ids": ids}, f, ensure_ascii=False)
    f.write("\n")
with open(os.path.join(HERE, "..", "tools", "Inputs", "llama2-chat.jinja"), "w") as f:
    f.write(TEMPLATES["llama2"])

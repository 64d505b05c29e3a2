"""Drives tfm-serve's images in chats over loopback and prints one line
per check for FileCheck (tfm-serve-vlm.test).

  serve_vlm_client.py TFM_SERVE LLAVA_LIBRARY LLAVA_EXE TEMPLATE PHOTO
                      TEXT_LIBRARY PARTS_TEMPLATE NEXT_LIBRARY NEXT_EXE
                      GEMMA3_LIBRARY GEMMA3_EXE GEMMA3_TEMPLATE

A chat message's content parts give an image as a data: URL; the greedy
answer is the executable's for the same prompt and image file, also while
a request of text alone shares the engine's steps. With a template that
reads typed parts itself (PARTS_TEMPLATE, llava-hf's), the template writes
the placeholder and the server the BOS it lacks: the same answers. Remote URLs, bad
base64, files that are no image and images for a text model are refused
by name. A LLaVA-NeXT model (NEXT_*) answers with its tiles' rows as its
executable does. A Gemma 3 model (GEMMA3_*) gets its processor's marker,
<start_of_image>, where a template reads no parts, and its own template
(GEMMA3_TEMPLATE, google/gemma-3-4b-it's) writes it: both answer as the
executable does for that prompt.
"""
import base64
import json
import subprocess
import sys
import threading

from serve_client import start_server
from serve_process import post

QUESTION = "What is in the picture?"


def chat(port, content, max_tokens=6):
    status, payload = post(port, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens, "temperature": 0})
    body = json.loads(payload)
    return status, (body["choices"][0]["message"]["content"]
                    if status == 200 else body["error"]["message"])


def alone(executable, prompt, *images):
    """The executable's continuation; a byte that ends no character (a
    random model's byte tokens) reads as U+FFFD, as the server writes it."""
    out = subprocess.run([executable, "--prompt", prompt, "-n", "6", *images],
                         capture_output=True, check=True).stdout
    return out.decode("utf-8", "replace").rstrip("\n")[len(prompt):]


def image_part(data, kind="image/png"):
    encoded = base64.b64encode(data).decode()
    return {"type": "image_url",
            "image_url": {"url": f"data:{kind};base64,{encoded}"}}


def main():
    serve, library, executable, template, photo, text_library, \
        parts_template, next_library, next_executable, gemma3_library, \
        gemma3_executable, gemma3_template, idefics3_library, \
        idefics3_executable, idefics3_template = sys.argv[1:16]
    with open(photo, "rb") as f:
        png = f.read()
    # The template renders "<s>USER: <content> ASSISTANT:"; a content of
    # parts joins them with newlines.
    with_image = alone(executable, f"USER: <image>\n{QUESTION} ASSISTANT:",
                       photo)
    text_only = alone(executable, f"USER: {QUESTION} ASSISTANT:")
    server, port = start_server(serve, library, "--chat-template", template)
    try:
        status, text = chat(port, [image_part(png),
                                   {"type": "text", "text": QUESTION}])
        print("image:", status, text == with_image)
        results = {}

        def run(name, content):
            results[name] = chat(port, content)[1]
        threads = [threading.Thread(target=run, args=(
                       "image", [image_part(png),
                                 {"type": "text", "text": QUESTION}])),
                   threading.Thread(target=run, args=("text", QUESTION))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("together:", results["image"] == with_image,
              results["text"] == text_only)
        for content in (
                [{"type": "image_url",
                  "image_url": {"url": "https://example.com/cat.png"}}],
                [{"type": "image_url",
                  "image_url": {"url": "data:image/png;base64,@@@"}}],
                [{"type": "image_url", "image_url": {"url": "data:,x"}}],
                [image_part(b"not an image at all")],
                [image_part(png), image_part(png),
                 {"type": "text", "text": "<image>"}],
                "<image> What is it?"):
            print("refused:", *chat(port, content))
    finally:
        server.terminate()
        server.wait(timeout=30)
    # llava-hf's template: "USER: <image>\n" for each image part, then
    # each text part and a space, then "ASSISTANT:".
    server, port = start_server(serve, library, "--chat-template",
                                parts_template)
    try:
        status, text = chat(port, [{"type": "text", "text": QUESTION},
                                   image_part(png)])
        print("parts template:", status, text == with_image,
              chat(port, QUESTION)[1] == text_only)
        print("two images:", chat(port, [{"type": "text", "text": "Two?"},
                                         image_part(png), image_part(png)])[0])
    finally:
        server.terminate()
        server.wait(timeout=30)
    photo_question = [image_part(png), {"type": "text", "text": QUESTION}]

    def answers_as(name, library, chat_template, executable, prompt):
        """The server's answer to the photo and the question is the
        executable's to `prompt` with the photo."""
        expected = alone(executable, prompt, photo)
        server, port = start_server(serve, library, "--chat-template",
                                    chat_template)
        try:
            status, text = chat(port, photo_question)
            print(f"{name}:", status, text == expected)
        finally:
            server.terminate()
            server.wait(timeout=30)
    # LLaVA-NeXT: the image's rows are its tiles', laid out by its size.
    answers_as("next image", next_library, template, next_executable,
               f"USER: <image>\n{QUESTION} ASSISTANT:")
    answers_as("gemma3 marker", gemma3_library, template, gemma3_executable,
               f"USER: <start_of_image>\n{QUESTION} ASSISTANT:")
    # Gemma 3's template: "<start_of_turn>user\n", <start_of_image> for
    # the image part, the text trimmed, "<end_of_turn>\n<start_of_turn>model\n".
    answers_as("gemma3 template", gemma3_library, gemma3_template,
               gemma3_executable,
               f"<start_of_turn>user\n<start_of_image>{QUESTION}"
               "<end_of_turn>\n<start_of_turn>model\n")
    # SmolVLM's (Idefics3's) template writes <image>; the server lays out
    # the image's tiles around it as the executable does.
    answers_as("idefics3 template", idefics3_library, idefics3_template,
               idefics3_executable,
               f"User:<image>{QUESTION}<end_of_utterance>\nAssistant:")
    server, port = start_server(serve, text_library, "--chat-template",
                                template)
    try:
        print("text model:", *chat(port, [image_part(png)]))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

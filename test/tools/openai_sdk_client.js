// openai_sdk_client.js - drives tfm-serve with OpenAI's official Node SDK
// (npm `openai`, test/tools/openai-sdk/) and prints one line per check for
// FileCheck (tfm-serve-openai-sdk.test): completions, chat streamed,
// embeddings (the SDK asks for base64 and decodes it) and transcriptions,
// each server behind an API key, and the SDK's error for a wrong key.
//
//   node openai_sdk_client.js TFM_SERVE LIBCHAT LIBEMBED LIBASR CLIP.WAV TEXT
const {spawn} = require('child_process');
const fs = require('fs');
const path = require('path');
const OpenAI = require(path.join(__dirname, 'openai-sdk', 'node_modules', 'openai'));

const KEY = 'sk-tfm-test';

// Starts tfm-serve on LIBRARY (port 0) and resolves with its port.
function serve(tfmServe, library) {
  return new Promise((resolve, reject) => {
    const server = spawn(tfmServe, [library, '--port', '0', '--api-key', KEY],
                         {stdio: ['ignore', 'pipe', 'inherit']});
    let out = '';
    server.stdout.on('data', (chunk) => {
      out += chunk;
      const banner = out.match(/on http:\/\/[^:]+:(\d+)\n/);
      if (banner) resolve({server, port: Number(banner[1])});
    });
    server.on('exit', (code) => reject(new Error(`tfm-serve exited ${code}`)));
  });
}

function client(port, apiKey = KEY) {
  return new OpenAI({baseURL: `http://127.0.0.1:${port}/v1`, apiKey,
                     maxRetries: 0});
}

async function main() {
  const [tfmServe, chatLib, embedLib, asrLib, clip, textPath] =
      process.argv.slice(2);
  const servers = [];
  try {
    const chat = await serve(tfmServe, chatLib);
    servers.push(chat.server);
    const openai = client(chat.port);
    const completion = await openai.completions.create(
        {model: 'chat', prompt: 'Once upon a time', max_tokens: 8});
    console.log('completion:', completion.object, completion.choices.length,
                'choice, text', completion.choices[0].text.length > 0,
                'usage completion tokens', completion.usage.completion_tokens);
    const stream = await openai.chat.completions.create(
        {model: 'chat', messages: [{role: 'user', content: 'Tell a story'}],
         max_tokens: 8, stream: true});
    let pieces = 0, text = '', finish = null;
    for await (const chunk of stream) {
      pieces += 1;
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    console.log('chat stream: chunks', pieces > 1, 'text', text.length > 0,
                'finish', finish);
    try {
      await client(chat.port, 'sk-wrong').models.list();
      console.log('wrong key: accepted');
    } catch (e) {
      console.log('wrong key:', e.constructor.name, e.status);
    }

    const embed = await serve(tfmServe, embedLib);
    servers.push(embed.server);
    const embeddings = await client(embed.port).embeddings.create(
        {model: 'embed', input: ['a photo of a cat', 'a photo of a dog']});
    const vector = embeddings.data[0].embedding;
    console.log('embeddings:', embeddings.data.length, 'vectors of',
                vector.length, 'floats, finite',
                vector.every(Number.isFinite));

    const asr = await serve(tfmServe, asrLib);
    servers.push(asr.server);
    const transcription = await client(asr.port).audio.transcriptions.create(
        {model: 'asr', file: fs.createReadStream(clip)});
    const expected = fs.readFileSync(textPath, 'utf8').trimEnd();
    console.log('transcription equals transformers\':',
                transcription.text === expected);
  } finally {
    for (const server of servers) server.kill();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

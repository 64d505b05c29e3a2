// openai_sdk_client.js - drives tfm-serve with OpenAI's official Node SDK
// (npm `openai`, test/tools/openai-sdk/) and prints one line per check for
// FileCheck (tfm-serve-openai-sdk.test): completions, chat streamed,
// embeddings (the SDK asks for base64 and decodes it) and transcriptions
// (a CTC recognizer's with word times; Whisper's verbose_json segments,
// translations and subtitles),
// each server behind an API key, and the SDK's error for a wrong key; on a
// model with a tool-calling template, a zod schema as response_format
// (zodResponseFormat, parsed by the SDK) and a tools round trip (zodFunction
// tools, a required call whose arguments the SDK parses, the call and the
// tool's answer sent back).
//
//   node openai_sdk_client.js TFM_SERVE LIBCHAT LIBEMBED LIBASR CLIP.WAV TEXT
//        LIBTOOLS TOOLS_TEMPLATE LIBWHISPER WHISPER.WAV
const {spawn} = require('child_process');
const fs = require('fs');
const path = require('path');
const modules = path.join(__dirname, 'openai-sdk', 'node_modules');
const OpenAI = require(path.join(modules, 'openai'));
const {zodResponseFormat, zodFunction} =
    require(path.join(modules, 'openai', 'helpers', 'zod'));
const {z} = require(path.join(modules, 'zod'));

const KEY = 'sk-tfm-test';

// Starts tfm-serve on LIBRARY (port 0) and resolves with its port.
function serve(tfmServe, library, ...options) {
  return new Promise((resolve, reject) => {
    const server = spawn(tfmServe, [library, '--port', '0', '--api-key', KEY,
                                    ...options],
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
  const [tfmServe, chatLib, embedLib, asrLib, clip, textPath, toolsLib,
         toolsTemplate, whisperLib, whisperAudio] = process.argv.slice(2);
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
    const words = await client(asr.port).audio.transcriptions.create(
        {model: 'asr', file: fs.createReadStream(clip),
         response_format: 'verbose_json', timestamp_granularities: ['word']});
    console.log('words:', words.words.map((w) => w.word).join(' ') === expected,
                words.words.every((w) => typeof w.word === 'string' &&
                                         typeof w.start === 'number' &&
                                         typeof w.end === 'number'));

    // Whisper with timestamps: verbose_json's segments as the SDK's
    // TranscriptionVerbose and TranslationVerbose type them.
    const whisper = await serve(tfmServe, whisperLib, '--max-request-bytes',
                                '8000000');
    servers.push(whisper.server);
    const segmentTypes = {id: 'number', seek: 'number', start: 'number',
                          end: 'number', text: 'string',
                          temperature: 'number', avg_logprob: 'number',
                          compression_ratio: 'number',
                          no_speech_prob: 'number'};
    const typed = (answer) =>
        typeof answer.duration === 'number' &&
        typeof answer.language === 'string' &&
        typeof answer.text === 'string' && answer.segments.length > 0 &&
        answer.segments.every((s) =>
            Object.entries(segmentTypes).every(([k, t]) => typeof s[k] === t) &&
            s.tokens.every(Number.isInteger));
    const verbose = await client(whisper.port).audio.transcriptions.create(
        {model: 'whisper', file: fs.createReadStream(whisperAudio),
         response_format: 'verbose_json', timestamp_granularities: ['segment']});
    console.log('verbose_json: TranscriptionVerbose', typed(verbose),
                verbose.language);
    // Both granularities: the SDK sends the array as two fields.
    const worded = await client(whisper.port).audio.transcriptions.create(
        {model: 'whisper', file: fs.createReadStream(whisperAudio),
         response_format: 'verbose_json',
         timestamp_granularities: ['word', 'segment']});
    console.log('verbose_json with words: TranscriptionVerbose', typed(worded),
                worded.words.length > 0 && worded.words.every((w) =>
                    typeof w.word === 'string' && typeof w.start === 'number' &&
                    typeof w.end === 'number' && w.start <= w.end));
    const translated = await client(whisper.port).audio.translations.create(
        {model: 'whisper', file: fs.createReadStream(whisperAudio),
         response_format: 'verbose_json'});
    console.log('translation: TranslationVerbose', typed(translated));
    const srt = await client(whisper.port).audio.transcriptions.create(
        {model: 'whisper', file: fs.createReadStream(whisperAudio),
         response_format: 'srt'});
    console.log('srt:', typeof srt, srt.startsWith('1\n00:00:'));

    const tools = await serve(tfmServe, toolsLib, '--chat-template',
                              toolsTemplate);
    servers.push(tools.server);
    await structuredOutputs(client(tools.port));
  } finally {
    for (const server of servers) server.kill();
  }
}

// zod schemas through the SDK's helpers: a response_format the SDK parses
// the answer with, and tools whose arguments it parses.
async function structuredOutputs(openai) {
  const Person = z.object({
    name: z.string().max(10),
    age: z.number().int(),
    pets: z.array(z.enum(['cat', 'dog'])).max(3),
  });
  let parsedPeople = 0;
  for (const seed of [1, 2, 3]) {
    const completion = await openai.beta.chat.completions.parse({
      model: 'tools', messages: [{role: 'user', content: 'Who are you?'}],
      response_format: zodResponseFormat(Person, 'person'),
      temperature: 1.5, seed, max_tokens: 300});
    const parsed = completion.choices[0].message.parsed;
    if (parsed && Person.safeParse(parsed).success) parsedPeople += 1;
  }
  console.log('zodResponseFormat: parsed', parsedPeople, 'of 3');

  const Weather = z.object({city: z.string().max(12),
                            unit: z.enum(['c', 'f'])});
  const functions = [zodFunction({name: 'get_weather', parameters: Weather,
                                  description: 'Current weather'})];
  const messages = [{role: 'user', content: 'Weather in Paris?'}];
  const first = await openai.beta.chat.completions.parse({
    model: 'tools', messages, tools: functions, tool_choice: 'required',
    parallel_tool_calls: false, temperature: 1.5, seed: 4, max_tokens: 300});
  const message = first.choices[0].message;
  const call = message.tool_calls[0];
  console.log('tool call:', first.choices[0].finish_reason, call.type,
              call.function.name, 'arguments parsed',
              Weather.safeParse(call.function.parsed_arguments).success);
  messages.push(message,
                {role: 'tool', tool_call_id: call.id, content: '22 degrees'});
  const second = await openai.chat.completions.create({
    model: 'tools', messages, tools: functions, max_tokens: 8});
  console.log('tool answer sent back:', second.choices.length,
              second.choices[0].finish_reason !== undefined);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

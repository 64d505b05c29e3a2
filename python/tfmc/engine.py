"""The batch engine from Python: many sequences of one language model
generated together (the runtime's tfm_engine: continuous batching over
@prefill_batch, a paged KV cache shared between common prefixes).

    engine = tfmc.Engine(model, max_sequences=8)
    texts = engine.generate(["Once upon", "The dog"], max_tokens=32)

or request by request:

    first = engine.submit("Once upon", max_tokens=32)
    while engine.pending():
        for request, token, finish in engine.step():
            ...

An engine is stepped by one thread at a time (a lock guards it); each step
runs with the GIL released. Closing the model closes its engines first;
a closed engine's methods raise TfmcError."""
import contextlib
import ctypes
import threading

import numpy as np

from tfmc._abi import (EngineEvent, EngineOptions, EngineRequest, EngineStats,
                       FINISH_NAMES, SamplerOptions, Status)


class Engine:
    def __init__(self, model, max_sequences=16, kv_pool_mb=0,
                 block_positions=0, prefill_chunk=0, share_prefixes=True,
                 max_drafts=0, draft=None, draft_p_min=0.75,
                 micro_batch_rows=0):
        """An engine over `model` (a tfmc.Model of a decoder language model
        compiled with its batched entry points, tfmc's default). Options
        are checked as integers of their C fields (ctypes would keep their
        low bits); the runtime checks their values (block_positions at
        most the model's context, ...). `max_drafts` > 0: requests may
        draft by prompt lookup (submit's lookup_ngram), up to that many
        tokens a step, checked through @verify_batch (tfmc
        --speculative). `draft`: a tfmc.Model of the same vocabulary that
        drafts greedily for every request not using prompt lookup (needs
        max_drafts), stopping where its top token is less likely than
        `draft_p_min`; it is closed after the engine. A model in pipeline
        stages (tfmc --pipeline-stages) runs a step's chunks as
        micro-batches of at least `micro_batch_rows` rows (0: 64), so that
        its stages work at once."""
        from tfmc import TfmcError, _check, _c_integer, _INT32_MAX, _INT64_MAX
        self._lock = threading.Lock()
        self._engine = None
        if "prefill_batch" not in model.description["entry_points"]:
            raise TfmcError(f"model '{model.description['name']}' has no "
                            "@prefill_batch: the engine serves decoder "
                            "language models")
        self._check, self._model = _check, model
        self._library = model._library
        options = self._library.tfm_engine_default_options()
        if max_sequences:
            options.max_sequences = _c_integer(max_sequences, "max_sequences",
                                               0, _INT32_MAX)
        options.kv_pool_bytes = _c_integer(kv_pool_mb, "kv_pool_mb", 0,
                                           _INT64_MAX >> 20) << 20
        if block_positions:
            options.block_positions = _c_integer(
                block_positions, "block_positions", 0, _INT32_MAX)
        if prefill_chunk:
            options.prefill_chunk = _c_integer(prefill_chunk, "prefill_chunk",
                                               0, _INT64_MAX)
        options.share_prefixes = 1 if share_prefixes else 0
        options.max_drafts = _c_integer(max_drafts, "max_drafts", 0,
                                        _INT32_MAX)
        options.draft_p_min = float(draft_p_min)
        if micro_batch_rows:
            options.micro_batch_rows = _c_integer(
                micro_batch_rows, "micro_batch_rows", 0, _INT64_MAX)
        engine = ctypes.c_void_p()
        status = Status()
        with contextlib.ExitStack() as using:
            handle = using.enter_context(model._using("Engine"))
            if draft is not None:
                options.draft_model = using.enter_context(
                    draft._using("Engine's draft"))
            _check(self._library.tfm_engine_new(
                handle, ctypes.byref(options), ctypes.byref(engine),
                ctypes.byref(status)), status)
            self._events = (EngineEvent * ((2 + options.max_drafts) *
                                           options.max_sequences))()
            self._engine = engine
            model._engines.add(self)  # closed before the model
            if draft is not None:
                draft._engines.add(self)  # and before the draft
        self._open = set()  # requests not finished yet

    def close(self):
        """Frees the engine (and its KV pool), after a step running on
        another thread; also done when it is collected, and by the model's
        close()."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            if self._engine:
                self._library.tfm_engine_free(self._engine)
                self._engine = None

    def __del__(self):
        self.close()

    def _live(self, what):
        """The engine's handle, under its lock; TfmcError once it is
        closed (by close(), or by its model's)."""
        if not self._engine:
            from tfmc import TfmcError
            if self._model._closed:
                raise self._model._closed_error(what)
            raise TfmcError(f"{what}: the engine is closed")
        return self._engine

    def submit(self, prompt, max_tokens=128, temperature=0.0, top_p=1.0,
               top_k=0, seed=0, ignore_eos=False, grammar=None,
               json_schema=None, lookup_ngram=0, draft_max=0, lora=0,
               images=()):
        """Queues `prompt` (text or token ids); returns the request's id,
        which step() names its tokens with. `grammar` (GBNF) or
        `json_schema` constrains this request's text, as in
        Model.generate; a request whose match is whole finishes.
        `lookup_ngram` > 0: speculative decoding by prompt lookup (up to
        `draft_max` drafts a step, 0: the engine's max_drafts); the text
        is the same. `lora`: an adapter of Model.load_lora the request runs
        with (0: none); requests of different adapters share steps.
        `images`: a vision-language model's, as in Model.generate."""
        from tfmc import _c_integer, _INT32_MAX, _INT64_MAX
        what = "Engine.submit"
        ids = (self._model._tokenize(prompt, None, what + ": the prompt")
               if isinstance(prompt, str)
               else self._model._token_ids(prompt, what))
        image_rows, ids = self._model._splice_images(ids, images)
        rows = (np.ascontiguousarray(np.concatenate(image_rows), np.float32)
                if image_rows else None)
        prompt_ids = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        request = EngineRequest(
            prompt_ids, len(ids),
            _c_integer(max_tokens, "max_tokens", -_INT64_MAX - 1, _INT64_MAX),
            SamplerOptions(temperature,
                           _c_integer(top_k, "top_k", -_INT32_MAX - 1,
                                      _INT32_MAX), top_p, 1.0,
                           _c_integer(seed, "seed", 0, 2**64 - 1)),
            1 if ignore_eos else 0, None,
            _c_integer(lookup_ngram, "lookup_ngram", 0, _INT32_MAX),
            _c_integer(draft_max, "draft_max", 0, _INT32_MAX),
            _c_integer(lora, "lora", 0, _INT32_MAX))
        if rows is not None:
            request.image_rows = rows.ctypes.data_as(
                ctypes.POINTER(ctypes.c_float))
            request.image_row_count = len(rows)
        # The engine takes the grammar when the submit succeeds.
        request.grammar = self._model._new_grammar(
            self._model._grammar_text(grammar, json_schema))
        request_id = ctypes.c_int64()
        status = Status()
        try:
            with self._lock:
                self._check(self._library.tfm_engine_submit(
                    self._live(what), ctypes.byref(request),
                    ctypes.byref(request_id), ctypes.byref(status)), status)
                self._open.add(request_id.value)
        except BaseException:
            self._library.tfm_grammar_free(request.grammar)
            raise
        return request_id.value

    def cancel(self, request):
        """Drops a request, waiting or running."""
        from tfmc import _c_integer, _INT64_MAX
        request = _c_integer(request, "request", -_INT64_MAX - 1, _INT64_MAX)
        status = Status()
        with self._lock:
            self._check(self._library.tfm_engine_cancel(
                self._live("Engine.cancel"), request, ctypes.byref(status)),
                status)
            self._open.discard(request)

    def pending(self):
        """How many requests have not finished."""
        return len(self._open)

    def step(self, drafts=False):
        """One step of every running request: a list of (request, token,
        finish), token None when the event only finishes it, finish None
        while it goes on, else "length", "eos" or "error". With drafts=True
        each also has the request's drafted and accepted tokens so far
        (speculative decoding)."""
        count = ctypes.c_int32()
        status = Status()
        with self._lock:
            code = self._library.tfm_engine_step(
                self._live("Engine.step"), self._events, len(self._events),
                ctypes.byref(count), ctypes.byref(status))
            events = []
            for event in self._events[:count.value]:
                finish = FINISH_NAMES.get(event.finish, "error")
                if finish:
                    self._open.discard(event.id)
                events.append((event.id,
                               event.token if event.token >= 0 else None,
                               finish) +
                              ((event.drafted_tokens, event.accepted_tokens)
                               if drafts else ()))
        self._check(code, status)
        return events

    def generate(self, prompts, **options):
        """Every prompt to its end, together: their texts in order (submit's
        options apply to each)."""
        requests = [self.submit(p, **options) for p in prompts]
        tokens = {r: [] for r in requests}
        waiting = set(requests)
        while waiting:
            for request, token, finish in self.step():
                if request in tokens and token is not None:
                    tokens[request].append(token)
                if finish:
                    waiting.discard(request)
        return [self._model.detokenize(tokens[r]) for r in requests]

    def stats(self):
        """The engine's counters (tfm_engine_stats) as a dict."""
        stats = EngineStats()
        with self._lock:
            self._library.tfm_engine_get_stats(self._live("Engine.stats"),
                                               ctypes.byref(stats))
        return {name: getattr(stats, name) for name, _ in stats._fields_}

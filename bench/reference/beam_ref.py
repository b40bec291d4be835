"""seq/beam.c's search over a batch of sentences x beams with tensor ops, for the PyTorch
translators (translator_ref.beam_search, the LSTM; translator_transformer_ref.beam_search,
the Transformer): the model side computes each step's log-probabilities, this side keeps the
hypotheses. Per sentence and step the candidates (each live row's sum plus each word's
log p) are ranked by raw sum; an <end> ranked within the top `beam` finishes a hypothesis
(the best finished is kept, by sum / len^alpha, len counting <end>); the first `beam` other
candidates stay live. A sentence stops when its best finished score is at least its best
live sum over (max_len + 1)^alpha (every later score is lower; beam 1, greedy, at its first
<end>); then its rows leave the batch. After max_len + 1 steps the best live hypothesis (its
first max_len words) wins only when it scores strictly better."""
import math

import torch


class BeamSearch:
    def __init__(self, B, beam, V, max_len, end_id, length_alpha, dtype):
        self.K, self.V, self.ML, self.T = beam, V, max_len, max_len + 1
        self.end, self.alpha = end_id, length_alpha
        self.act = torch.arange(B)          # sentences still searching, kr rows each (in order)
        self.kr = 1
        self.sums = torch.zeros(B, 1, dtype=dtype)  # (active, rows per sentence): live raw sums
        self.hist = torch.zeros(B, 0, dtype=torch.long)
        self.fin_norm = torch.full((B,), -math.inf, dtype=dtype)
        self.fin_words = torch.zeros(B, self.T, dtype=torch.long)
        self.fin_len = torch.zeros(B, dtype=torch.long)
        self.n_fin = torch.zeros(B, dtype=torch.long)

    def norm(self, s, n):
        return s if self.alpha == 0 else s / float(n) ** self.alpha

    def advance(self, lp, t):
        """Step t's log-probabilities lp (rows, V) of the live rows: returns parent (the row
        of lp each new row extends) and toks (the word it adds), K rows per active
        sentence."""
        K, V, kr, act = self.K, self.V, self.kr, self.act
        na = act.shape[0]
        cand = (self.sums[:, :, None] + lp.view(na, kr, V)).view(na, kr * V)
        top, idx = cand.topk(min(2 * K, kr * V), dim=1)  # rank order
        tok, par = idx % V, idx // V
        is_end = tok == self.end
        end_ok = is_end & (torch.arange(top.shape[1])[None, :] < K)
        self.n_fin[act] += end_ok.sum(1)
        end_norm = torch.where(end_ok, self.norm(top, t + 1), torch.full_like(top, -math.inf))
        best_end, best_pos = end_norm.max(1)
        better = torch.nonzero(best_end > self.fin_norm[act]).flatten()
        if better.numel():
            b = act[better]
            self.fin_norm[b] = best_end[better]
            self.fin_words[b, :t] = self.hist[better * kr + par[better, best_pos[better]]]
            self.fin_len[b] = t
        live = ~is_end
        pos = torch.nonzero(live & (live.long().cumsum(1) <= K))[:, 1].view(na, K)
        self.sums = top.gather(1, pos)
        parent = (torch.arange(na)[:, None] * kr + par.gather(1, pos)).view(-1)
        toks = tok.gather(1, pos).view(-1)
        self.hist = torch.cat([self.hist[parent], toks[:, None]], dim=1)
        self.kr = K
        return parent, toks

    def retire(self):
        """Drops the sentences whose search has ended; returns the mask of the rows kept (for
        the model's own per-row state) or None when every row stays."""
        best_live = self.sums[:, 0]
        keep = ~(((self.K == 1) & (self.n_fin[self.act] >= 1)) |
                 ((best_live <= 0) & (self.fin_norm[self.act] >= self.norm(best_live, self.T))))
        if bool(keep.all()):
            return None
        rows = keep.repeat_interleave(self.K)
        self.act, self.sums, self.hist = self.act[keep], self.sums[keep], self.hist[rows]
        return rows

    def done(self):
        return self.act.shape[0] == 0

    def result(self):
        """words (B, max_len) (0 past each end), lengths (B), scores (B) (normalised)."""
        scores = self.fin_norm.clone()
        if self.act.shape[0]:  # live at the limit: the best (row 0 of each) against the finished
            live_norm = self.norm(self.sums[:, 0], self.T)
            take = torch.nonzero(live_norm > self.fin_norm[self.act]).flatten()
            b = self.act[take]
            self.fin_words[b] = self.hist[take * self.K]
            self.fin_len[b] = self.ML
            scores[b] = live_norm[take]
        words = self.fin_words[:, :self.ML].clone()
        words[torch.arange(self.ML)[None, :] >= self.fin_len[:, None]] = 0
        return words, self.fin_len, scores

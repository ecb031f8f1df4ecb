/**
 * "Your text": drop a file here, pick one, paste text, or load the example
 * (Moby-Dick). It is read in a worker and stays in this browser; the line
 * below says what was loaded (characters, symbols, what reads as unknown), or
 * why a file was refused. A link to a run on a text asks for its file here.
 */
import { useState, type DragEvent } from 'react';
import { MOBY_DICK } from '../../data/moby-dick.ts';
import { formatBytes, TEXT_LIMITS } from '../../data/text-corpus.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { forgetKeptTexts, loadExampleText, loadPastedText, loadTextFile } from '../../state/text/index.ts';
import './text.css';

export function TextSource({ disabled }: { disabled: boolean }) {
  const text = usePipeLab((s) => s.text);
  const [over, setOver] = useState(false);
  const [paste, setPaste] = useState('');
  const [pasteOpen, setPasteOpen] = useState(false);
  const [forgot, setForgot] = useState<string | null>(null);
  const busy = disabled || text.loading !== null;
  const onDrop = (e: DragEvent<HTMLDivElement>) => {
    e.preventDefault();
    setOver(false);
    const file = e.dataTransfer.files[0];
    if (file && !busy) void loadTextFile(file);
  };
  return (
    <div className="text-source" data-testid="text-source">
      {text.pending?.hash && (
        <p className="text-pending" role="status" data-testid="text-pending">
          This link is a run on your own text (content hash <code>{text.pending.hash}</code>). A link cannot carry a file: pick the
          file it was made from and the run is set up as the link says; a file with another hash is refused.
        </p>
      )}
      <div
        className={`text-drop${over ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
        aria-label="Drop a text file here"
      >
        <label className="text-pick">
          <span>Drop a UTF-8 text file here, or </span>
          <input
            type="file"
            accept=".txt,.md,.csv,.tsv,.json,.py,.js,.ts,.html,.xml,text/*"
            disabled={busy}
            data-testid="text-file"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              e.currentTarget.value = '';
              if (file) void loadTextFile(file);
            }}
          />
        </label>
        <p className="muted small">
          At most {formatBytes(TEXT_LIMITS.maxBytes)} and {TEXT_LIMITS.vocab} symbols (rarer characters read as one unknown symbol). The text stays in
          this browser; a link names it by its content hash.
        </p>
        <div className="text-buttons">
          <button type="button" disabled={busy} onClick={() => void loadExampleText()} title={MOBY_DICK.licence}>
            Load the example: {MOBY_DICK.title}
          </button>
          <button type="button" disabled={busy} onClick={() => setPasteOpen(!pasteOpen)} aria-expanded={pasteOpen}>
            Paste text…
          </button>
        </div>
        {pasteOpen && (
          <div className="text-paste">
            <textarea aria-label="Text to train on" rows={5} value={paste} onChange={(e) => setPaste(e.currentTarget.value)} disabled={busy} />
            <button type="button" disabled={busy || paste.length === 0} onClick={() => void loadPastedText(paste)}>
              Use this text
            </button>
          </div>
        )}
      </div>
      {text.loading && (
        <p className="muted small" role="status">
          Reading {text.loading}…
        </p>
      )}
      {text.error && (
        <p className="field-error" role="alert" data-testid="text-error">
          {text.error}
        </p>
      )}
      {text.loaded && (
        <p className="field-hint" data-testid="text-loaded">
          {text.loaded.line}. Hash <code>{text.loaded.hash}</code>.
          {text.loaded.name === MOBY_DICK.name ? (
            <span> {MOBY_DICK.licence}</span>
          ) : (
            <span>
              {' '}
              Kept in this browser only, so a reload resumes without the file.{' '}
              <button type="button" className="link-button" onClick={() => void forgetKeptTexts().then(setForgot)} data-testid="text-forget">
                Forget kept texts
              </button>
              {forgot && <span role="status"> {forgot}</span>}
            </span>
          )}
        </p>
      )}
    </div>
  );
}

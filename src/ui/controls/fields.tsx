/**
 * Labelled form fields. Number fields keep what the person typed while it is
 * not a valid value, show why under the field, and commit only valid numbers;
 * leaving one with an invalid draft puts back the value in use and says what
 * was not taken and why.
 */
import { useEffect, useId, useState, type ReactNode } from 'react';
import { fieldHelp } from '../../config/field-docs.ts';

interface FieldShellProps {
  id: string;
  label: string;
  hint?: ReactNode;
  error?: string | null;
  /** The configuration field it edits: its label's tooltip is that field's one description (src/config/field-docs.ts). */
  name?: string;
  children: ReactNode;
}

function FieldShell({ id, label, hint, error, name, children }: FieldShellProps) {
  return (
    <div className={`field${error ? ' invalid' : ''}`}>
      <label htmlFor={id} title={name ? fieldHelp(name) : undefined}>
        {label}
      </label>
      {children}
      {error ? (
        <p className="field-error" id={`${id}-msg`}>
          {error}
        </p>
      ) : hint ? (
        <p className="field-hint" id={`${id}-msg`}>
          {hint}
        </p>
      ) : null}
    </div>
  );
}

/**
 * A field's draft text and its own problem: the draft follows outside changes
 * of `valueText` unless `keep(draft)` says it already stands for the new value
 * (so `0.10` or `1, 2` stay as typed).
 */
function useDraft(valueText: string, error: string | null | undefined, keep: (draft: string) => boolean) {
  const id = useId();
  const [text, setText] = useState(valueText);
  const [local, setLocal] = useState<string | null>(null);
  useEffect(() => {
    setText((t) => (keep(t) ? t : valueText));
    setLocal(null);
  }, [valueText]);
  return { id, text, setText, local, setLocal, shown: local ?? error ?? null };
}

export interface NumberFieldProps {
  label: string;
  value: number;
  onChange: (v: number) => void;
  min?: number;
  max?: number;
  step?: number;
  integer?: boolean;
  hint?: ReactNode;
  /** An error from outside (e.g. the whole-configuration check) for this field. */
  error?: string | null;
  disabled?: boolean;
  name?: string;
}

function checkNumber(text: string, o: NumberFieldProps): number | string {
  if (text.trim() === '') return 'enter a number';
  const n = Number(text);
  if (!Number.isFinite(n)) return `“${text}” is not a number`;
  if (o.integer && !Number.isInteger(n)) return 'must be a whole number';
  if (o.min !== undefined && n < o.min) return `must be at least ${o.min}`;
  if (o.max !== undefined && n > o.max) return `must be at most ${o.max}`;
  return n;
}

export function NumberField(props: NumberFieldProps) {
  const { label, value, onChange, min, max, step, hint, error, disabled, name } = props;
  const { id, text, setText, local, setLocal, shown } = useDraft(String(value), error, (t) => Number(t) === value && t.trim() !== '');
  // A draft left invalid goes back to the value in use; what was typed and why it was not taken stay said until the next edit.
  const [refused, setRefused] = useState<string | null>(null);
  useEffect(() => setRefused(null), [value]);
  return (
    <FieldShell id={id} label={label} hint={hint} error={shown ?? refused} name={name}>
      <input
        id={id}
        name={name}
        type="number"
        inputMode={props.integer ? 'numeric' : 'decimal'}
        value={text}
        min={min}
        max={max}
        step={step ?? (props.integer ? 1 : 'any')}
        disabled={disabled}
        aria-invalid={shown ? true : undefined}
        aria-describedby={shown || refused || hint ? `${id}-msg` : undefined}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          setRefused(null);
          const r = checkNumber(t, props);
          if (typeof r === 'number') {
            setLocal(null);
            if (r !== value) onChange(r);
          } else setLocal(r);
        }}
        onBlur={() => {
          if (local) {
            setRefused(`${text.trim() === '' ? 'An empty field' : `“${text}”`} was not taken (${local}): ${label} stays ${value}.`);
            setText(String(value));
            setLocal(null);
          }
        }}
      />
    </FieldShell>
  );
}

export interface TextFieldProps<T> {
  label: string;
  /** The value as text (what the field shows when no draft differs). */
  value: string;
  /** Reads the text: a value to commit, or throws an Error whose message is shown under the field. */
  parse: (text: string) => T;
  onChange: (v: T) => void;
  hint?: ReactNode;
  error?: string | null;
  disabled?: boolean;
  name?: string;
}

/** A text field for a structured value (e.g. a list `1,1,2`): keeps the draft while it does not parse, and says why. */
export function TextField<T>({ label, value, parse, onChange, hint, error, disabled, name }: TextFieldProps<T>) {
  const sameValue = (t: string): boolean => {
    try {
      return JSON.stringify(parse(t)) === JSON.stringify(parse(value));
    } catch {
      return false;
    }
  };
  const { id, text, setText, setLocal, shown } = useDraft(value, error, sameValue);
  return (
    <FieldShell id={id} label={label} hint={hint} error={shown} name={name}>
      <input
        id={id}
        name={name}
        type="text"
        value={text}
        disabled={disabled}
        spellCheck={false}
        aria-invalid={shown ? true : undefined}
        aria-describedby={shown || hint ? `${id}-msg` : undefined}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          try {
            const v = parse(t);
            setLocal(null);
            onChange(v);
          } catch (err) {
            setLocal(err instanceof Error ? err.message : String(err));
          }
        }}
      />
    </FieldShell>
  );
}

export interface SelectFieldProps<T extends string> {
  label: string;
  value: T;
  options: readonly { value: T; label: string }[];
  onChange: (v: T) => void;
  hint?: ReactNode;
  error?: string | null;
  disabled?: boolean;
  name?: string;
}

export function SelectField<T extends string>({ label, value, options, onChange, hint, error, disabled, name }: SelectFieldProps<T>) {
  const id = useId();
  return (
    <FieldShell id={id} label={label} hint={hint} error={error} name={name}>
      <select
        id={id}
        name={name}
        value={value}
        disabled={disabled}
        aria-invalid={error ? true : undefined}
        aria-describedby={error || hint ? `${id}-msg` : undefined}
        onChange={(e) => onChange(e.target.value as T)}
      >
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </FieldShell>
  );
}

export interface CheckboxFieldProps {
  label: string;
  checked: boolean;
  onChange: (v: boolean) => void;
  hint?: ReactNode;
  disabled?: boolean;
  name?: string;
}

export function CheckboxField({ label, checked, onChange, hint, disabled, name }: CheckboxFieldProps) {
  const id = useId();
  return (
    <div className="field checkbox">
      <input id={id} name={name} type="checkbox" checked={checked} disabled={disabled} onChange={(e) => onChange(e.target.checked)} aria-describedby={hint ? `${id}-msg` : undefined} />
      <label htmlFor={id} title={name ? fieldHelp(name) : undefined}>
        {label}
      </label>
      {hint && (
        <p className="field-hint" id={`${id}-msg`}>
          {hint}
        </p>
      )}
    </div>
  );
}

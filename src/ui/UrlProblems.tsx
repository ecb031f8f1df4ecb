/** Values from the address that broke a rule: named, replaced by defaults, the rest kept. */
import { usePipeLab } from '../state/store/index.ts';

export function UrlProblems() {
  const problems = usePipeLab((s) => s.urlProblems);
  const dismiss = usePipeLab((s) => s.dismissUrlProblems);
  if (problems.length === 0) return null;
  return (
    <div className="url-problems" role="alert" data-testid="url-problems">
      <div>
        <b>
          {problems.length === 1 ? 'One value in the link was not valid' : `${problems.length} values in the link were not valid`}; {problems.length === 1 ? 'it was' : 'they were'} replaced by
          the default, the rest of the configuration is as linked:
        </b>
        <ul>
          {problems.map((p) => (
            <li key={`${p.field}:${p.message}`}>
              <code>{p.message}</code>
            </li>
          ))}
        </ul>
      </div>
      <button type="button" onClick={dismiss} aria-label="Dismiss the message about the link">
        Dismiss
      </button>
    </div>
  );
}

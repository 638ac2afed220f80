import type { Project } from '../api/api.types';

interface Props {
  projects: Project[] | null;
  selected: number | null;
  onSelect: (id: number) => void;
}

/** The caller's projects with their log counts. */
export function ProjectList({ projects, selected, onSelect }: Props) {
  return (
    <nav class="panel projects" aria-label="Projects">
      <h2>Projects</h2>
      {projects && projects.length === 0 && <p class="muted">No project yet: create one through the API.</p>}
      <ul data-testid="project-list">
        {(projects ?? []).map((p) => (
          <li key={p.id}>
            <button
              type="button"
              class="project-item"
              data-testid="project-item"
              data-project-id={p.id}
              aria-current={p.id === selected ? 'true' : undefined}
              onClick={() => onSelect(p.id)}
            >
              <span class="project-name">{p.name}</span>
              {typeof p.log_count === 'number' && <span class="project-count">{p.log_count.toLocaleString('en')}</span>}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}

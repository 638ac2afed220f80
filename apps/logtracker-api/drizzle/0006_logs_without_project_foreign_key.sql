-- The foreign key checked every inserted log against projects, one lookup per row: a quarter of
-- the database's cost of a batch. The inserts lock the project row once per statement instead,
-- and deleting a project deletes its logs (logs.repository.ts, projects.repository.ts).
ALTER TABLE "logs" DROP CONSTRAINT "logs_project_id_projects_id_fk";

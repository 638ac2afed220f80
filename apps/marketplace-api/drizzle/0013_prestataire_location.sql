DROP INDEX "prestataire_profiles_location_idx";--> statement-breakpoint
ALTER TABLE "prestataire_profiles" ADD COLUMN "location" "earth" GENERATED ALWAYS AS (ll_to_earth(latitude, longitude)) STORED;--> statement-breakpoint
CREATE INDEX "prestataire_profiles_location_idx" ON "prestataire_profiles" USING gist ("location");